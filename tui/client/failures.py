"""HTTP statuses and transport failures turned into typed ClientErrors a person can act on.

Server text reaches a message only in part (`DETAIL` characters), with the key removed first.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from tui.context.json_types import JSONObject

from tui.client.endpoint import Endpoint
from tui.client.errors import (AuthFailed, BadRequest, ClientError, ConnectionFailed, ConnectTimedOut, ContextOverflow,
                     NameNotResolved, NotFound, RateLimited, ReadTimedOut, ServerFailed, StreamIncomplete, TLSFailed)
from tui.client.reply import Reply
from tui.client.schemas import MAX_CONTEXT, ErrorBody, ErrorDetail, decode, excerpt

DETAIL = 600  # characters of the server's own words quoted in a message
RESOLVE_HINTS = ("name or service not known", "nodename nor servname", "temporary failure in name resolution",
                 "no address associated", "name resolution", "getaddrinfo")


def status_error(status: int, retry_header: str | None, raw: bytes, url: str, endpoint: Endpoint) -> ClientError:
    """The typed error for an HTTP status ≥ 400 and the (bounded) body that came with it."""
    body, error, detail = _error_detail(raw, endpoint)
    host = endpoint.host
    if status in (401, 403):
        return AuthFailed(f"{status} from {host}: {key_hint(endpoint)}. Server said: {detail}", status=status)
    if status == 404:
        model = endpoint.model
        return NotFound(f"404 at {url}: check the base URL (it should end in /v1) and the model name"
                        f"{' ' + repr(model) if model else ''}. Server said: {detail}", status=404)
    if status in (429, 503):
        retry = retry_after(retry_header)
        reason = "rate limited" if status == 429 else "server busy"
        return RateLimited(f"{status} {reason} by {host}" + (f" (Retry-After {retry:.0f}s)" if retry is not None else ""),
                           retry, status)
    if status == 400 and (error.type == "no_db_connection" or detail.startswith("No connected db")):
        # LiteLLM's answer to a key it cannot find (it has no key database to look in): a refused key
        return AuthFailed(f"400 from {host}: {key_hint(endpoint)} (the gateway knows no such key). "
                          f"Server said: {detail}", status=status)
    if 400 <= status < 500:
        return _bad_request(status, body, error, detail)
    return ServerFailed(f"{status} server error from {host}: {detail}", status=status)


def key_hint(endpoint: Endpoint) -> str:
    env = endpoint.key_env
    if endpoint.has_key:
        return f"the key in ${env} was refused"
    if endpoint.key_withheld:
        return (f"the key in ${env} was not sent: this address came from a {endpoint.source}, not from you "
                "(give it with --base-url, $OPENAI_BASE_URL or the config file, or confirm it in the app)")
    return f"no key was sent: set ${env} (or name another variable with --api-key-env)"


def _error_detail(raw: bytes, endpoint: Endpoint) -> tuple[JSONObject | None, ErrorDetail, str]:
    """The error body (when it is an object), its `error` part, and the server's message, short and keyless."""
    try:
        loose: Any = decode(raw, Any, "the error body")
        shaped = decode(raw, ErrorBody, "the error body") if isinstance(loose, dict) else None
    except ClientError:
        loose = shaped = None
    error, message = ErrorDetail(), ""
    if shaped is not None:
        if isinstance(shaped.error, ErrorDetail):
            error = shaped.error
            message = error.message or error.type or (str(error.code) if error.code is not None else "")
        else:
            message = shaped.error or shaped.message or ""
    text = message or raw[:DETAIL + 512].decode("utf-8", "replace").strip()
    detail = excerpt(text, endpoint.redact, DETAIL) if text else ""
    return (loose if isinstance(loose, dict) else None), error, detail


# vLLM's wording: "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens
# (4000 in the messages, 1000 in the completion)."; the figures are read from the message when no field has them
_MAX_CONTEXT = re.compile(r"maximum context length is (\d{1,9}) tokens")
_IN_MESSAGES = re.compile(r"(\d{1,12}) in the messages")


def _figure(pattern: re.Pattern[str], text: str) -> int | None:
    found = pattern.search(text[:2000])
    return int(found.group(1)) if found else None


def _bad_request(status: int, body: JSONObject | None, error: ErrorDetail, detail: str) -> BadRequest:
    kind = error.type or (error.code if isinstance(error.code, str) else "") or ""
    worded = _figure(_MAX_CONTEXT, error.message or detail)
    if kind in ("exceed_context_size_error", "context_length_exceeded") or "context" in kind or worded:
        prompt = error.n_prompt_tokens or _figure(_IN_MESSAGES, error.message or detail)
        ctx = error.n_ctx or (worded if worded and worded <= MAX_CONTEXT else None)  # a window field's bound
        figures = f" ({prompt} prompt tokens, context window {ctx})" if prompt or ctx else ""
        return ContextOverflow(f"the request is larger than the model's context window{figures}: {detail}",
                               prompt, ctx, body)
    return BadRequest(f"{status} bad request: {detail}", status=status, body=body)


def retry_after(value: str | None) -> float | None:
    if not value or len(value) > 64:
        return None
    try:
        seconds = float(value)
        return max(0.0, seconds) if seconds == seconds else None  # NaN is no answer
    except ValueError:
        pass
    try:
        return max(0.0, (parsedate_to_datetime(value) - datetime.now(timezone.utc)).total_seconds())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


def transport_error(exc: httpx.HTTPError, endpoint: Endpoint, partial: Reply | None) -> ClientError:
    host = endpoint.host
    text = endpoint.redact(str(exc))[:DETAIL] or type(exc).__name__
    kept = f"; kept the {len(partial.content)} characters received" if partial and partial.content else ""
    if isinstance(exc, httpx.ConnectTimeout):
        return ConnectTimedOut(f"timed out connecting to {host}: is the address right and the server up?", partial)
    if isinstance(exc, httpx.TimeoutException):
        return ReadTimedOut(f"{host} stopped sending for longer than the read timeout{kept}", partial)
    if isinstance(exc, httpx.ConnectError):
        lowered = text.lower()
        if any(hint in lowered for hint in RESOLVE_HINTS):
            return NameNotResolved(f"cannot resolve the host name in {endpoint.base_url}: {text}", partial)
        if "ssl" in lowered or "certificate" in lowered or "tls" in lowered:
            return TLSFailed(f"TLS handshake with {host} failed: {text}", partial)
        return ConnectionFailed(f"cannot connect to {host} ({text}): is the server running there?", partial)
    if isinstance(exc, (httpx.RemoteProtocolError, httpx.ReadError)):
        return StreamIncomplete(f"{host} closed the connection mid-reply ({text}){kept}", partial)
    if isinstance(exc, httpx.TooManyRedirects):
        return ClientError(f"{host} redirected too many times", partial)
    return ClientError(f"request to {host} failed: {text}", partial)
