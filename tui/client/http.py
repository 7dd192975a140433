"""The OpenAI-compatible HTTP client: models, chat completions (streamed or not), typed errors."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any, Awaitable, Callable

import httpx

from .endpoint import Endpoint
from .errors import (AuthFailed, BadRequest, ClientError, ConnectionFailed, ConnectTimedOut, ContextOverflow,
                     MalformedChunk, NameNotResolved, NotFound, RateLimited, ReadTimedOut, ServerFailed,
                     StreamErrorEvent, StreamIncomplete, TLSFailed)
from .reply import Reply, ReplyAssembler, reply_from_response
from .sse import SSEParser

StatusCallback = Callable[[str], Any]
DeltaCallback = Callable[[str, ReplyAssembler], Any]
RESOLVE_HINTS = ("name or service not known", "nodename nor servname", "temporary failure in name resolution",
                 "no address associated", "name resolution", "getaddrinfo")


@dataclass
class Limits:
    connect: float = 5.0
    read: float = 120.0
    retries: int = 3  # for 429 / 503, each after its Retry-After or a backoff
    max_wait: float = 30.0


class OpenAIClient:
    def __init__(self, endpoint: Endpoint, limits: Limits | None = None,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep):
        self.endpoint = endpoint
        self.limits = limits or Limits()
        self._sleep = sleep
        timeout = httpx.Timeout(self.limits.read, connect=self.limits.connect)
        self._http = httpx.AsyncClient(timeout=timeout, follow_redirects=True,
                                       event_hooks={"request": [self._authorise]})

    async def _authorise(self, request: httpx.Request) -> None:
        # The key goes to the configured host only; a redirect elsewhere never carries it.
        request.headers.pop("Authorization", None)
        if request.url.netloc.decode() == self.endpoint.host:
            request.headers.update(self.endpoint.auth_headers())

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> "OpenAIClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    # -- plain JSON calls -------------------------------------------------------------------
    async def get_json(self, path: str, at_root: bool = False) -> Any:
        return await self._json("GET", path, None, at_root)

    async def post_json(self, path: str, body: Any, at_root: bool = False) -> Any:
        return await self._json("POST", path, body, at_root)

    async def _json(self, method: str, path: str, body: Any, at_root: bool) -> Any:
        url = (self.endpoint.root if at_root else self.endpoint.base_url) + path
        async with self._guard(None):
            response = await self._http.request(method, url, json=body)
        self._raise_for_status(response, url)
        try:
            return response.json()
        except ValueError:
            raise MalformedChunk(f"{method} {url} answered with something that is not JSON: "
                                 f"{self._safe(response.text[:120])!r}") from None

    async def list_models(self) -> list[str]:
        data = await self.get_json("/models")
        items = data.get("data") if isinstance(data, dict) else None
        return [str(m.get("id")) for m in items or [] if isinstance(m, dict) and m.get("id")]

    # -- chat ------------------------------------------------------------------------------
    async def chat(self, body: dict, assembler: ReplyAssembler | None = None,
                   on_delta: DeltaCallback | None = None, on_status: StatusCallback | None = None) -> Reply:
        """Send a chat completion. Streamed when body['stream'] is true.

        The caller may pass its own assembler: if the task is cancelled, what had arrived is in
        `assembler.reply`, marked incomplete.
        """
        assembler = assembler or ReplyAssembler()
        attempt = 0
        while True:
            try:
                if body.get("stream"):
                    return await self._stream(body, assembler, on_delta)
                return await self._once(body)
            except RateLimited as exc:
                attempt += 1
                if attempt > self.limits.retries or assembler.reply.content:
                    raise
                wait = min(exc.retry_after if exc.retry_after is not None else 2.0 ** attempt, self.limits.max_wait)
                if on_status:
                    on_status(f"{exc.message}; retry {attempt}/{self.limits.retries} in {wait:.0f}s (Esc cancels)")
                await self._sleep(wait)
            except asyncio.CancelledError:
                assembler.reply.incomplete = True
                assembler.reply.error = "cancelled"
                raise

    async def _once(self, body: dict) -> Reply:
        url = self.endpoint.base_url + "/chat/completions"
        async with self._guard(None):
            response = await self._http.post(url, json=body)
        self._raise_for_status(response, url)
        try:
            return reply_from_response(response.json())
        except ValueError:
            raise MalformedChunk(f"the server's reply is not JSON: {self._safe(response.text[:120])!r}") from None

    async def _stream(self, body: dict, assembler: ReplyAssembler, on_delta: DeltaCallback | None) -> Reply:
        url = self.endpoint.base_url + "/chat/completions"
        body = {**body, "stream": True}
        body.setdefault("stream_options", {"include_usage": True})
        parser, done = SSEParser(), False
        async with self._guard(assembler.reply):
            async with self._http.stream("POST", url, json=body) as response:
                if response.status_code >= 400:
                    await response.aread()
                    self._raise_for_status(response, url)
                async for raw in response.aiter_bytes():
                    for event in parser.feed(raw):
                        done = self._handle_event(event, assembler, on_delta) or done
                        if done:
                            break
                    if done:
                        break
                for event in parser.close():
                    done = self._handle_event(event, assembler, on_delta) or done
        reply = assembler.reply
        if not done and reply.finish_reason is None:
            reply.incomplete = True
            raise StreamIncomplete("the stream ended before the reply was finished (no [DONE]); "
                                   f"kept the {len(reply.content)} characters received", reply)
        return reply

    def _handle_event(self, event, assembler: ReplyAssembler, on_delta: DeltaCallback | None) -> bool:
        data = event.data.strip()
        if data == "[DONE]":
            return True
        try:
            chunk = json.loads(data)
        except ValueError:
            assembler.reply.incomplete = True
            raise MalformedChunk(f"the server sent a chunk that is not JSON: {self._safe(data[:80])!r}; "
                                 f"kept the {len(assembler.reply.content)} characters received",
                                 assembler.reply) from None
        if event.event == "error" or (isinstance(chunk, dict) and chunk.get("error")):
            assembler.reply.incomplete = True
            detail = chunk.get("error", chunk) if isinstance(chunk, dict) else chunk
            message = detail.get("message", detail) if isinstance(detail, dict) else detail
            raise StreamErrorEvent(f"the server reported an error mid-stream: {self._safe(str(message))}",
                                   assembler.reply)
        if isinstance(chunk, dict):
            added = assembler.apply(chunk)
            if on_delta:
                on_delta(added, assembler)
        return False

    # -- errors ------------------------------------------------------------------------------
    def _safe(self, text: str) -> str:
        return self.endpoint.redact(text)

    def _guard(self, partial: Reply | None):
        return _TransportGuard(self, partial)

    def _raise_for_status(self, response: httpx.Response, url: str) -> None:
        status = response.status_code
        if status < 400:
            return
        body = _json_or_none(response)
        detail = _error_message(body) or self._safe(response.text[:200].strip())
        if status in (401, 403):
            env = self.endpoint.key_env
            hint = (f"the key in ${env} was refused" if self.endpoint.has_key
                    else f"no key was sent: set ${env} (or name another variable with --api-key-env)")
            raise AuthFailed(f"{status} from {self.endpoint.host}: {hint}. Server said: {detail}", status=status)
        if status == 404:
            model = self.endpoint.model or (body or {}).get("model", "")
            raise NotFound(f"404 at {url}: check the base URL (it should end in /v1) and the model name"
                           f"{' ' + repr(model) if model else ''}. Server said: {detail}", status=404)
        if status in (429, 503):
            retry = _retry_after(response.headers.get("Retry-After"))
            reason = "rate limited" if status == 429 else "server busy"
            raise RateLimited(f"{status} {reason} by {self.endpoint.host}"
                              + (f" (Retry-After {retry:.0f}s)" if retry is not None else ""), retry, status)
        if status == 400 or 400 < status < 500:
            raise _bad_request(status, body, detail)
        raise ServerFailed(f"{status} server error from {self.endpoint.host}: {detail}", status=status)


class _TransportGuard:
    """Turns httpx transport failures into typed errors that keep the partial reply."""

    def __init__(self, client: OpenAIClient, partial: Reply | None):
        self.client, self.partial = client, partial

    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, kind, exc, tb) -> bool:
        if exc is None or isinstance(exc, (ClientError, asyncio.CancelledError)):
            return False
        if not isinstance(exc, httpx.HTTPError):
            return False
        if self.partial is not None:
            self.partial.incomplete = True
        raise _transport_error(exc, self.client.endpoint, self.partial) from None


def _transport_error(exc: httpx.HTTPError, endpoint: Endpoint, partial: Reply | None) -> ClientError:
    host = endpoint.host
    text = endpoint.redact(str(exc)) or type(exc).__name__
    kept = f"; kept the {len(partial.content)} characters received" if partial and partial.content else ""
    if isinstance(exc, httpx.ConnectTimeout):
        return ConnectTimedOut(f"timed out connecting to {host}: is the address right and the server up?", partial)
    if isinstance(exc, httpx.ReadTimeout):
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
    return ClientError(f"request to {host} failed: {text}", partial)


def _json_or_none(response: httpx.Response) -> dict | None:
    try:
        data = response.json()
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _error_message(body: dict | None) -> str:
    if not body:
        return ""
    error = body.get("error", body)
    if isinstance(error, dict):
        return str(error.get("message") or error.get("type") or "")
    return str(error)


def _bad_request(status: int, body: dict | None, detail: str) -> BadRequest:
    error = (body or {}).get("error", {}) if isinstance((body or {}).get("error"), dict) else {}
    kind = error.get("type") or error.get("code") or ""
    if kind in ("exceed_context_size_error", "context_length_exceeded") or "context" in str(kind):
        prompt, ctx = error.get("n_prompt_tokens"), error.get("n_ctx")
        figures = f" ({prompt} prompt tokens, context window {ctx})" if prompt or ctx else ""
        return ContextOverflow(f"the request is larger than the model's context window{figures}: {detail}",
                               prompt, ctx, body)
    return BadRequest(f"{status} bad request: {detail}", status=status, body=body)


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        from datetime import datetime, timezone
        return max(0.0, (parsedate_to_datetime(value) - datetime.now(timezone.utc)).total_seconds())
    except (TypeError, ValueError):
        return None
