"""Connecting, a transition of the Controller: find the server, connect, and take what it offers.

Each step is said in the status line. The API key goes only where link.py lets it. What it may do beyond the
parts is what its hooks name.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Coroutine, Sequence

from tui.client.errors import AuthFailed, ClientError
from tui.context.untrusted.visible import visible
from tui.controller.events import Tone
from tui.controller.parts import Parts

if TYPE_CHECKING:
    from tui.client.endpoint import Endpoint
    from tui.context.templates.library import ChatTemplate
    from tui.context.tokens.tokenizers import Tokenizer
    from tui.sessions.model import Session


@dataclass(frozen=True)
class ConnectHooks:
    """What connecting does beyond the parts, each a function of another transition."""

    adopt_sample: Callable[[Session], None]  # no server found: the sample session is shown
    offline: Callable[[str, bool], None]  # the link failed: said, and retried (the bool) or not
    use_tokenizer: Callable[[Tokenizer, bool | None], None]
    tokenizer_source_changed: Callable[[bool], None]  # the server's tokenizer went away (True) or came back
    # spawned once connected, each with its name
    on_connected: Sequence[tuple[Callable[[], Coroutine[Any, Any, None]], str]]


async def connect(ctl: Parts, hooks: ConnectHooks) -> None:
    """Find the server (the URL given, else a local one), connect, and take what it offers: its template,
    its context window, and the tokenizer that counts as it does. Said in the status line at each step."""
    from tui.client.connect import connect as open_connection, scan_local
    from tui.context.templates.library import plain_chatml
    from tui.client.endpoint import EndpointError
    from tui.context.families.registry import cache_rule
    from tui.context.tokens.tokenizers import get_tokenizer

    from tui.controller.samples import sample_session
    settings = ctl.settings
    base, source = ctl.link.where_to_connect(ctl.wb.session.base_url)
    if not base and settings.scan_local:
        ctl.status("looking for a local server on 8080, 11434, 1234, 8000…")
        found = await scan_local()
        if found:
            base, source = found[0], f"found {found[1]} on {found[0]}"
    if not base:
        if not ctl.wb.session.messages:
            hooks.adopt_sample(sample_session())  # what was typed meanwhile stays the draft
        ctl.status("offline: no server found. Connect with --base-url URL (or $OPENAI_BASE_URL); "
                   "the pane works on what you type.", Tone.CAUTION)
        return
    try:
        endpoint = ctl.link.endpoint_for(base, source, ctl.wb.session.model)
    except EndpointError as exc:
        ctl.status(f"bad base URL: {exc}", Tone.BAD)
        return
    ctl.status(f"connecting to {endpoint.base_url} ({source})…")
    try:
        connection = await open_connection(endpoint)
    except AuthFailed as exc:  # trying again changes nothing until the key is set: say what to set, once
        ctl.link.refused = True
        wb = ctl.wb
        if not settings.template and _default_template(wb.template):  # its template is unknown: show no system
            wb.set_template(plain_chatml())                 # turn the user did not write
        if not wb.tokenizer_pending:  # the server was not seen: the pane's counts are not its own
            wb.set_tokenizer(wb.tokenizer, False)
            ctl.changed(save=False)
        hooks.offline(f"offline: {visible(str(exc))}", False)
        return
    except ClientError as exc:
        hooks.offline(f"offline: {visible(str(exc))}", True)
        return
    ctl.link.refused = False
    ctl.link.connection, ctl.link.client = connection, connection.client
    ctl.link.window_claim = None  # a window another server's answer claimed says nothing of this one
    if settings.tokenizer and not ctl.wb.tokenizer_pending:  # the tokenizer chosen stays; its verdict may not
        ctl.wb.set_tokenizer(ctl.wb.tokenizer, False if ctl.link.unseen else None)
    wb = ctl.wb
    wb.session.base_url, wb.session.model = endpoint.base_url, endpoint.model
    info = connection.info
    if connection.template is not None and not settings.template:
        wb.set_template(connection.template)
    elif connection.assumed is not None and not settings.template and _default_template(wb.template):
        wb.set_template(connection.assumed)  # the server's is unseen: the family's, said to be assumed
    if info.n_ctx and not wb.policy.context_window:
        wb.set_policy(context_window=int(info.n_ctx))
    wb.cache_rule = cache_rule(info.kind, endpoint.model)
    wb.content_specials = info.kind == "llama.cpp"  # it tokenizes the whole prompt with control strings parsed
    wb.api = endpoint.api  # the API the chat speaks there: each request is recorded as it is sent
    ctl.link.status_line = (f"{info.kind} at {endpoint.base_url} · model {endpoint.model} · context "
                            f"{info.n_ctx or '?'} · {connection.note} ({source}){ctl.link.key_note(endpoint)}")
    ctl.status(ctl.link.status_line)
    _say_placeholder_key(ctl, endpoint)
    ctl.changed(save=False)
    for job, name in hooks.on_connected:  # llama.cpp's slots and prompt cache, modelled; the price table
        ctl.runtime.spawn(job, name)
    if not settings.tokenizer:
        if connection.on_server:
            hooks.use_tokenizer(await ctl.link.server_tokenizer(endpoint, wb.template, hooks.tokenizer_source_changed),
                                True)
        else:
            tokenizer = await asyncio.to_thread(get_tokenizer, connection.tokenizer)
            hooks.use_tokenizer(tokenizer, connection.exact)


def _say_placeholder_key(ctl: Parts, endpoint: Endpoint) -> None:
    """Once a run: a key that looks like a placeholder ("anything", "sk-1234") is never looked for in texts."""
    if not endpoint.has_key or endpoint.key_searchable or ctl.link.placeholder_said:
        return
    ctl.link.placeholder_said = True
    ctl.notify(f"${ctl.settings.api_key_env} looks like a placeholder, not a secret: it is sent and never saved "
               "where a key goes, but no text is searched for it (that would rewrite ordinary words)",
               title="Placeholder key")


def _default_template(template: ChatTemplate) -> bool:
    """True for the template a session starts with (built-in chatml), which nobody chose."""
    return template.name == "chatml" and template.origin == "builtin"

