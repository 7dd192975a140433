"""Finding a server and choosing, from what it offers, the template and tokenizer the pane uses."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Sequence

import httpx

from tui.context.assumed import assumed_template as assumed_template_for
from tui.context.families.identity import SERVER, SHIPPED
from tui.context.families.registry import checked_on_server, tokenizer_for_model
from tui.context.templates.library import ChatTemplate, template_from_text
from tui.context.tokens.counting import TokenizerNotFound, get_tokenizer

from tui.client.endpoint import Endpoint
from tui.client.errors import ClientError
from tui.client.http import Limits, OpenAIClient
from tui.client.schemas import Tokenized
from tui.client.server_info import ServerInfo, probe

LOCAL_PORTS = ((8080, "llama.cpp"), (11434, "Ollama"), (1234, "LM Studio"), (8000, "vLLM"))
PROBE_TEXT = "Hello wörld <|im_start|>system\n42"


@dataclass
class Connection:
    client: OpenAIClient
    info: ServerInfo
    template: ChatTemplate | None  # the server's own, when it has a Jinja one
    tokenizer: str  # a shipped tokenizer's name for get_tokenizer ("server" when the server counts)
    exact: bool  # the server's verdict: the local tokenizer gave its ids (or the server counts itself)
    note: str
    source: str = SHIPPED  # the counting tokenizer's identity source: SERVER, or a shipped one
    assumed: ChatTemplate | None = None  # a gateway hides the server's template: the built-in assumed instead
    assumption: str = ""  # what is assumed and where it was learned, said in the status line and the pane

    @property
    def on_server(self) -> bool:
        """True when counts come from the server's /tokenize."""
        return self.source == SERVER


async def scan_local(ports: Sequence[tuple[int, str]] = LOCAL_PORTS, timeout: float = 0.4) -> tuple[str, str] | None:
    """The first usual local port that answers /v1/models (loopback only, never with a key).

    What it finds is a suggestion: give it to endpoint_for with source "scan" (no key).
    """
    async with httpx.AsyncClient(timeout=timeout) as http:
        async def check(port: int, label: str) -> tuple[str, str] | None:
            try:  # the status is enough: whatever body a stray local service sends is never read
                async with http.stream("GET", f"http://127.0.0.1:{port}/v1/models") as response:
                    return (f"http://127.0.0.1:{port}/v1", label) if response.status_code == 200 else None
            except httpx.HTTPError:
                return None

        for found in await asyncio.gather(*(check(port, label) for port, label in ports)):
            if found:
                return found
    return None


async def _local_matches_server(client: OpenAIClient, name: str) -> bool:
    """True when a shipped tokenizer gives the server's own ids for a probe text."""
    try:
        data = await client.post_json("/tokenize", {"content": PROBE_TEXT, "parse_special": False}, at_root=True,
                                      shape=Tokenized)
    except ClientError:  # any failure means: not verified
        return False
    server_ids = [t if isinstance(t, int) else t.id for t in data.tokens]
    try:
        local = await asyncio.to_thread(get_tokenizer, name)  # loading takes a moment: off the event loop
    except TokenizerNotFound:
        return False
    encoded = local.plain_ids(PROBE_TEXT) if hasattr(local, "plain_ids") else None
    return encoded == server_ids


async def connect(endpoint: Endpoint) -> Connection:
    client = OpenAIClient(endpoint, Limits(connect=5.0, read=300.0))
    try:
        info = await probe(client)
    except BaseException:
        await client.aclose()
        raise
    endpoint.model = endpoint.model or info.model
    template = None
    if info.has_own_template:
        template = template_from_text(info.chat_template or "", f"server:{info.kind}", f"{info.kind} template",
                                      kind=SERVER, bos_token=info.bos_token, eos_token=info.eos_token)
    if info.kind == "llama.cpp":
        for family in checked_on_server(info.model):
            if await _local_matches_server(client, family.tokenizer or ""):
                return Connection(client, info, template, family.tokenizer or "", True,
                                  f"the server's tokenizer is {family.display}: counting locally, exact")
        return Connection(client, info, template, "server", True, "counting with the server's /tokenize", SERVER)
    if info.gateway:
        return _through_gateway(client, info)
    name = tokenizer_for_model(info.model)
    if template is not None:
        return Connection(client, info, template, name, False, f"{info.kind}: counts are estimates ({name})")
    assumed, assumption = assumed_template(info)  # the server does not show its template: one is assumed
    return Connection(client, info, None, name, False, f"{info.kind}: counts are estimates ({name}; {assumption})",
                      assumed=assumed, assumption=assumption)


def assumed_template(info: ServerInfo) -> tuple[ChatTemplate, str]:
    """The built-in template to assume for a server that does not show its own (a gateway, a hosted API,
    vLLM, Ollama's Go template), and what that assumption rests on.

    The model a gateway forwards to (its /v1/model/info) names the family; else the model's name.
    A family it names nothing of gets ChatML with no default system prompt: a system turn the user did
    not write is never shown as if sent.
    """
    upstream = info.upstream
    model = upstream.model_id or info.model
    if upstream.model_id:
        where = f"the upstream model {upstream.model!r}, learned from {upstream.source}"
    elif info.gateway:
        where = f"the model name {model!r}; the gateway does not say what it forwards to"
    else:
        where = f"the model name {model!r}; the server does not show its template"
    template, name = assumed_template_for(model)  # the one choice render, import and replay make too
    if name is None:
        return template, f"template assumed: chatml without a default system prompt (no known family in {where})"
    return template, f"template assumed: {name} (from {where})"


def _through_gateway(client: OpenAIClient, info: ServerInfo) -> Connection:
    assumed, assumption = assumed_template(info)
    model = info.upstream.model_id or info.model
    name = tokenizer_for_model(model)
    note = (f"{info.gateway} gateway: it hides the server's template and tokenizer, counts are estimates "
            f"({name} tokenizer; {assumption})")
    return Connection(client, info, None, name, False, note, assumed=assumed, assumption=assumption)
