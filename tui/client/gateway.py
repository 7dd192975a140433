"""Gateways in front of a model server: LiteLLM's proxy, recognised and asked what it forwards to.

A gateway speaks the OpenAI API and hides the server behind it: the server's template, tokenizer and
extras (`/props`, `/tokenize`, `/apply-template`) are out of reach. LiteLLM is recognised by its
health endpoint (`/health/readiness`, open without a key); with the key, `/v1/model/info` says which
upstream model a name is forwarded to (`litellm_params.model`, e.g. `openai/tiny-qwen3`). That name
picks the template family and tokenizer to assume, labelled as learned from the gateway; the counts
stay estimates. The upstream's address (`api_base`) is information only: nothing is sent there.

LiteLLM also answers some requests its own way, which `auth_problem` turns into one line naming the
variable to set: without a key `/v1/models` gives a 500 "Internal Server Error", a wrong key a 400
"No connected db." (type `no_db_connection`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Awaitable

from tui.context.untrusted.visible import visible

from tui.client.errors import AuthFailed, ClientError, MalformedAnswer, ServerFailed
from tui.client.failures import key_hint
from tui.client.schemas import GatewayModels, GatewayReadiness, convert

if TYPE_CHECKING:
    from tui.client.endpoint import Endpoint
    from tui.client.http import OpenAIClient
    from tui.client.server_info import ServerInfo

LITELLM = "litellm"
NAME_LIMIT = 200  # characters of an upstream name or address kept (they come from the gateway)
HIDDEN = "/props, /tokenize and /apply-template"


@dataclass
class Upstream:
    """What a gateway reveals about the model behind a name; empty strings when it reveals nothing."""

    model: str = ""  # e.g. "openai/tiny-qwen3": the provider prefix and the upstream's own model id
    api_base: str = ""  # the upstream's URL as the gateway reports it (never contacted)
    source: str = ""  # where it was learned, e.g. "the gateway's /v1/model/info"

    @property
    def model_id(self) -> str:
        """The upstream's own model id: the part after the provider prefix ("tiny-qwen3")."""
        return self.model.split("/", 1)[1] if "/" in self.model else self.model


def _short(text: Any) -> str:
    return visible(text[:NAME_LIMIT]) if isinstance(text, str) else ""


async def _answer(call: Awaitable[Any]) -> Any:
    """The JSON answer of an optional request, or None for any failure (refused, missing, not JSON)."""
    try:
        return await call
    except ClientError:
        return None


async def is_litellm(client: "OpenAIClient") -> bool:
    """True when the server answers LiteLLM's readiness (or liveliness) check; asks nothing that needs a key."""
    answer = await _answer(client.get_json("/health/readiness", at_root=True))
    if isinstance(answer, dict) and "status" in answer and "db" in answer:
        try:
            convert(answer, GatewayReadiness, "the gateway's /health/readiness")
            return True
        except MalformedAnswer:
            return False
    alive = await _answer(client.get_json("/health/liveliness", at_root=True))
    return isinstance(alive, str) and alive.strip().lower().startswith("i'm alive")


async def probe_litellm(client: "OpenAIClient", info: "ServerInfo") -> bool:
    """Recognise a LiteLLM gateway and learn what it reveals about `info.model`'s upstream."""
    if not await is_litellm(client):
        return False
    info.kind, info.gateway = LITELLM, "LiteLLM"
    info.notes.append(f"LiteLLM gateway: the server behind it ({HIDDEN}) is out of reach; "
                      "its template and tokenizer are assumed, and counts are estimates")
    try:
        listing = await client.get_json("/model/info", shape=GatewayModels)
    except MalformedAnswer as exc:
        info.notes.append(f"the gateway's /v1/model/info was not understood ({exc}): the upstream model is unknown")
        return True
    except ClientError as exc:
        info.notes.append(f"the gateway's /v1/model/info did not answer ({exc}): the upstream model is unknown")
        return True
    for entry in listing.data:
        if entry.model_name != info.model or entry.litellm_params is None:
            continue
        info.upstream = Upstream(_short(entry.litellm_params.model), _short(entry.litellm_params.api_base),
                                 "the gateway's /v1/model/info")
        details = entry.model_info
        if details is not None:
            info.found_window(details.max_input_tokens, "server",
                              "the gateway's /v1/model/info max_input_tokens (its configured limit)")
        break
    if not info.upstream.model:
        info.notes.append(f"the gateway does not say which model {_short(info.model)!r} is forwarded to")
    return True


def auth_problem(exc: ClientError, endpoint: "Endpoint", gateway: bool) -> AuthFailed | None:
    """The one-line AuthFailed for an answer that means a missing key (LiteLLM answers 500 without one); else None.

    A refused key (401, 403, LiteLLM's 400 "No connected db.") is an AuthFailed already (failures.py).
    """
    if isinstance(exc, AuthFailed):
        return exc
    if gateway and not endpoint.has_key and isinstance(exc, ServerFailed):
        return AuthFailed(f"the gateway at {endpoint.host} wants a key: {key_hint(endpoint)}", status=exc.status)
    return None
