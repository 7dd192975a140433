"""What renders and counts the upstream's requests: learned from the upstream as the app learns it.

llama.cpp gives its own template and tokenizer (/props, /tokenize); another server gives what it can;
an upstream that does not answer (or wants a key the tap never holds) leaves the family's built-in
template (plain ChatML for an unknown one) and the model's shipped tokenizer: estimates, said so in the note.
"""

from __future__ import annotations

import asyncio

from tui.context.tokens.counting import get_tokenizer

from tui.tap.recorder import Engine

LEARN_TIMEOUT = 15.0  # seconds for the whole probe: an upstream that trickles never holds up the recording


def learn_engine(upstream: str, model: str = "") -> Engine:
    """Ask the upstream (without any key) for its template and tokenizer; run it off the event loop."""
    from tui.context.templates.library import plain_chatml
    from tui.client.endpoint import Endpoint
    from tui.context.families.registry import cache_rule, tokenizer_for_model

    try:
        endpoint = Endpoint(upstream, model, source="scan")  # never a key: the tap holds none
        connection = asyncio.run(_connect(endpoint))
    except Exception as exc:  # noqa: BLE001 - any failure: the estimates below, and why
        name, template = tokenizer_for_model(model), fallback_template(model)
        return Engine(template, get_tokenizer(name), cache_rule(upstream_kind(upstream), model), None,
                      f"the upstream did not say its template ({type(exc).__name__}: {str(exc)[:200]}): "
                      f"built-in {template.name} and {name}, estimates", False)
    info = connection.info
    template = connection.template or connection.assumed or plain_chatml()  # the server's, else assumed
    rule = cache_rule(info.kind, info.model)
    if connection.on_server:
        from tui.client.server_tokenizer import ServerTokenizer
        tokenizer = ServerTokenizer(endpoint, set(template.special_strings()))
    else:
        tokenizer = get_tokenizer(connection.tokenizer)
    return Engine(template, tokenizer, rule, info, f"{info.kind} · {connection.note}", connection.exact,
                  connection.cache_config)


def fallback_template(model: str):
    """The template the app assumes for this model when the server shows none (tui/client/connect.py): the
    family's built-in, or ChatML with no default system turn; nothing the client did not send is shown as sent."""
    from tui.client.connect import assumed_template
    from tui.client.server_info import ServerInfo
    return assumed_template(ServerInfo(model=model))[0]


def upstream_kind(upstream: str) -> str:
    from urllib.parse import urlsplit

    from tui.client.server_info import hosted_kind
    return hosted_kind(urlsplit(upstream).hostname or "")


async def _connect(endpoint):
    """The connection (its client closed), with the server's cache settings when it is llama.cpp."""
    from tui.client.connect import connect
    from tui.client.errors import ClientError
    from tui.client.server_cache import read_cache_facts

    connection = await asyncio.wait_for(connect(endpoint), LEARN_TIMEOUT)
    connection.cache_config = None
    try:
        if connection.info.kind == "llama.cpp":
            facts = await asyncio.wait_for(read_cache_facts(connection.client), LEARN_TIMEOUT)
            connection.cache_config = facts.config()
    except (ClientError, TimeoutError):
        pass  # no model of its cache: each request is predicted against its conversation's previous one
    finally:
        await connection.client.aclose()
    return connection
