"""The OpenAI-compatible HTTP client: models, chat completions (streamed or not), typed errors.

What a server sends is bounded (answers, error bodies, stream lines, replies, time between chunks)
and checked against `schemas` before use. The key goes only where `Endpoint.may_carry_key` allows,
and every ClientError leaving a public method has had the key scrubbed from it.
"""

from __future__ import annotations

import asyncio
import functools
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Awaitable, Callable, Concatenate, Coroutine, Literal, ParamSpec, TypedDict, TypeVar, overload

from urllib.parse import urlsplit

import httpx

from tui.context.json_types import JSONObject
from tui.context.request_bytes import request_bytes

from tui.client.endpoint import Endpoint
from tui.client.errors import ClientError, RateLimited, ReadTimedOut, ServerFailed, StreamIncomplete, TooLarge
from tui.client.failures import status_error, transport_error
from tui.client.reply import Reply, ReplyAssembler, reply_from_response
from tui.client.schemas import Chunk, ErrorDetail, ModelList, decode, excerpt
from tui.client.sse import MAX_LINE
from tui.client.stream import DeltaCallback, read_stream

StatusCallback = Callable[[str], Any]
KEY_STYLE_HEADER = "X-Ctxpane-Key-Style"  # taken off every request before it leaves: which header carries the key
T = TypeVar("T")
P = ParamSpec("P")
R = TypeVar("R")
MiB = 1024 * 1024


class RequestContent(TypedDict, total=False):
    """What httpx is given to send a JSON body (_json_content): its bytes, headers, and no redirects."""

    content: bytes
    headers: dict[str, str]
    follow_redirects: bool


@dataclass
class Limits:
    connect: float = 5.0
    read: float = 120.0  # longest silence; also the longest a whole JSON answer may take to arrive
    retries: int = 3  # for 429 / 503, each after its Retry-After or a backoff
    max_wait: float = 30.0
    idle: float | None = None  # longest wait between two chunks of a streamed reply (None: `read`)
    max_answer: int = 8 * MiB  # bytes of a JSON answer (/props carries a whole template)
    max_error: int = 64 * 1024  # bytes of an error body read; the rest is never read
    max_line: int = MAX_LINE  # characters of one line of an event stream
    max_reply: int = 16_000_000  # characters of one reply (content, reasoning and tool calls)
    max_stream: int = 256 * MiB  # bytes of one event stream


def _scrubbed(method: Callable[Concatenate[OpenAIClient, P], Awaitable[R]]
              ) -> Callable[Concatenate[OpenAIClient, P], Coroutine[Any, Any, R]]:
    """Every ClientError leaving a public method has the key removed from it."""
    @functools.wraps(method)
    async def wrapper(self: OpenAIClient, /, *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await method(self, *args, **kwargs)
        except ClientError as exc:
            exc.scrub(self.endpoint.redact)
            raise
    return wrapper


class OpenAIClient:
    def __init__(self, endpoint: Endpoint, limits: Limits | None = None,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep):
        self.endpoint = endpoint
        self.limits = limits or Limits()
        self._sleep = sleep
        timeout = httpx.Timeout(self.limits.read, connect=self.limits.connect)
        # identity: a compressed answer could expand far past the bounds before they are checked
        self._http = httpx.AsyncClient(timeout=timeout, follow_redirects=True, max_redirects=5,
                                       headers={"Accept-Encoding": "identity"},
                                       event_hooks={"request": [self._authorise]})

    async def _authorise(self, request: httpx.Request) -> None:
        # Called for every request, redirects included: the key goes to the endpoint's own origin only.
        style = request.headers.pop(KEY_STYLE_HEADER, "")
        for name in ("Authorization", "x-api-key", "x-goog-api-key"):
            request.headers.pop(name, None)
        request.headers.update(self.endpoint.auth_headers(str(request.url), style))
        if style == "anthropic":  # the API version Anthropic's endpoints require, key or no key
            request.headers["anthropic-version"] = "2023-06-01"

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> "OpenAIClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    # -- plain JSON calls -------------------------------------------------------------------
    # Without `shape` an answer is any JSON value (Any: the caller narrows what it reads); with one, that type.
    @overload
    async def get_json(self, /, path: str, at_root: bool = False) -> Any: ...

    @overload
    async def get_json(self, /, path: str, at_root: bool = False, *, shape: type[T]) -> T: ...

    @_scrubbed
    async def get_json(self, path: str, at_root: bool = False, shape: Any = Any) -> Any:
        """The answer at `path`, checked against `shape` (Any: any JSON value, still bounded)."""
        return await self._json("GET", path, None, at_root, shape)

    @overload
    async def post_json(self, /, path: str, body: Any, at_root: bool | str = False, *,
                        key_style: str = "") -> Any: ...

    @overload
    async def post_json(self, /, path: str, body: Any, at_root: bool | str = False, *, shape: type[T],
                        key_style: str = "") -> T: ...

    @_scrubbed
    async def post_json(self, path: str, body: Any, at_root: bool | str = False, shape: Any = Any,
                        key_style: str = "") -> Any:
        """POST `body`; `key_style` names a provider whose own header carries the key (anthropic, gemini)."""
        return await self._json("POST", path, body, at_root, shape, key_style)

    async def _json(self, method: str, path: str, body: Any, at_root: bool | str, shape: Any,
                    key_style: str = "") -> Any:
        url = self._base(at_root) + path
        raw = await self._fetch(method, url, body, key_style)
        return decode(raw, shape, f"the answer of {method} {url}", self.endpoint.redact)

    def _base(self, at_root: bool | str) -> str:
        """Where a path goes: under the base URL, the server root (at_root), or the origin ("origin": a
        provider's own API beside its OpenAI-compatible one, e.g. Gemini's /v1beta/models/…)."""
        if at_root == "origin":
            parts = urlsplit(self.endpoint.base_url)
            return f"{parts.scheme}://{parts.netloc}"
        return self.endpoint.root if at_root else self.endpoint.base_url

    async def _fetch(self, method: str, url: str, body: Any, key_style: str = "") -> bytes:
        """The body of a successful answer, read within the size and time bounds; else a typed error."""
        content = _json_content(body)
        if key_style:
            content["headers"] = {**content.get("headers", {}), KEY_STYLE_HEADER: key_style}
        async with self._guard(None):
            async with asyncio.timeout(self.limits.read):  # however slowly it trickles in
                async with self._http.stream(method, url, **content) as response:
                    await self._fail_on_status(response, url)
                    return await self._read_bounded(response, self.limits.max_answer, url)

    async def _read_bounded(self, response: httpx.Response, limit: int, url: str, strict: bool = True) -> bytes:
        declared = response.headers.get("Content-Length", "")
        if strict and declared.isdigit() and len(declared) < 20 and int(declared) > limit:
            raise TooLarge(f"{url} announced an answer of {int(declared):,} bytes; the limit is {limit:,}")
        parts: list[bytes] = []
        size = 0
        async for piece in response.aiter_bytes():
            parts.append(piece)
            size += len(piece)
            if size > limit:
                if strict:
                    raise TooLarge(f"the answer of {url} passed {limit:,} bytes; stopped reading")
                break
        return b"".join(parts)[:limit]

    async def _fail_on_status(self, response: httpx.Response, url: str) -> None:
        if 300 <= response.status_code < 400:  # (a POST's redirects are not followed: see _json_content)
            where = excerpt(response.headers.get("Location", "?"), self.endpoint.redact, 200)
            raise ClientError(f"{url} redirected the request ({response.status_code}) to {where}: not followed, "
                              "the conversation would go to another address (point --base-url there if you "
                              "trust it)", status=response.status_code)
        if response.status_code >= 400:
            raw = await self._read_bounded(response, self.limits.max_error, url, strict=False)
            raise status_error(response.status_code, response.headers.get("Retry-After"), raw, url, self.endpoint)

    @_scrubbed
    async def list_models(self) -> list[str]:
        listing = await self.get_json("/models", shape=ModelList)
        return [entry.id for entry in listing.data if entry.id]

    # -- chat ------------------------------------------------------------------------------
    @_scrubbed
    async def chat(self, body: JSONObject, assembler: ReplyAssembler | None = None,
                   on_delta: DeltaCallback | None = None, on_status: StatusCallback | None = None,
                   api: str = "") -> Reply:
        """Send a chat completion. Streamed when body['stream'] is true. With `api`, `body` is already written in
        that API (the reviewer's, whose schema rides where each API takes it) and is sent as it is.

        The caller may pass its own assembler: if the task is cancelled or the server misbehaves,
        what had arrived is in `assembler.reply` (and in the error's `partial`), marked incomplete.
        """
        assembler = assembler or ReplyAssembler()
        if not body.get("model") and self.endpoint.model:  # the model found is the model asked for
            body = {**body, "model": self.endpoint.model}
        attempt = 0
        while True:
            try:
                if body.get("stream"):
                    return await self._stream(body, assembler, on_delta)
                return await self._once(body, api)
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

    def _wire(self, body: JSONObject, written_in: str = "") -> tuple[str, JSONObject, str]:
        """Where a chat body goes and as what: the API's path, the body in its format, the key's header. A body
        `written_in` an API goes to that API's path as it is."""
        from tui.context.formats import FormatKind
        from tui.context.formats.convert import wire_request

        kind = FormatKind(written_in or self.endpoint.api)
        return (self.endpoint.base_url + kind.path, body if written_in else wire_request(body, kind.value),
                "anthropic" if kind is FormatKind.MESSAGES else "")

    async def _once(self, body: JSONObject, written_in: str = "") -> Reply:
        url, body, style = self._wire(body, written_in)
        raw = await self._fetch("POST", url, body, style)
        api = written_in or self.endpoint.api
        if api != "chat":
            return translated_reply(raw, api, self.endpoint.redact)
        chunk = decode(raw, Chunk, "the server's reply", self.endpoint.redact)
        if chunk.error is not None:
            message = chunk.error.message if isinstance(chunk.error, ErrorDetail) else chunk.error
            raise ServerFailed(f"the server answered with an error: {excerpt(message or '?', self.endpoint.redact, 600)}")
        return reply_from_response(chunk)

    async def _stream(self, body: JSONObject, assembler: ReplyAssembler, on_delta: DeltaCallback | None) -> Reply:
        if not body.get("stream") or "stream_options" not in body:  # (the app's bodies have both: sent as built)
            body = {"stream_options": {"include_usage": True}, **body, "stream": True}
        url, body, style = self._wire(body)
        content = _json_content(body)
        if style:
            content["headers"] = {**content.get("headers", {}), KEY_STYLE_HEADER: style}
        reply = assembler.reply
        try:
            async with self._guard(reply):
                async with self._http.stream("POST", url, **content) as response:
                    await self._fail_on_status(response, url)
                    done = await read_stream(response, assembler, on_delta, self.limits, self.endpoint)
        except ClientError as exc:
            reply.incomplete = True
            exc.partial = reply
            raise
        if not done and reply.finish_reason is None:
            reply.incomplete = True
            raise StreamIncomplete("the stream ended before the reply was finished (no [DONE]); "
                                   f"kept the {len(reply.content)} characters received", reply)
        return reply

    def _guard(self, partial: Reply | None) -> _TransportGuard:
        return _TransportGuard(self, partial)


def translated_reply(raw: bytes, api: str, redact: Any = None) -> Reply:
    """A whole Messages or Responses answer as the reply it carries (read through its chat chunk)."""
    import msgspec

    from tui.client.schemas import convert
    from tui.context.formats import FormatKind
    from tui.context.formats.replies import Translator

    try:
        data = msgspec.json.decode(raw)
    except (msgspec.DecodeError, RecursionError):
        raise ServerFailed(f"the server's reply is not JSON: {excerpt(raw.decode('utf-8', 'replace'), redact, 200)}") \
            from None
    if isinstance(data, dict) and data.get("type") == "error" or isinstance(data, dict) and data.get("error"):
        error = data.get("error")
        message = error.get("message") if isinstance(error, dict) else error
        raise ServerFailed(f"the server answered with an error: {excerpt(str(message or '?'), redact, 600)}")
    return reply_from_response(convert(Translator(FormatKind(api)).whole(data), Chunk, "the server's reply"))


class _TransportGuard:
    """Turns httpx transport failures and overall timeouts into typed errors that keep the partial reply."""

    def __init__(self, client: OpenAIClient, partial: Reply | None) -> None:
        self.client, self.partial = client, partial

    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> Literal[False]:  # re-raises, typed, or lets it through
        if exc is None or isinstance(exc, (ClientError, asyncio.CancelledError)):
            return False
        if isinstance(exc, TimeoutError):
            if self.partial is not None:
                self.partial.incomplete = True
            kept = f"; kept the {len(self.partial.content)} characters received" if self.partial else ""
            raise ReadTimedOut(f"{self.client.endpoint.host} took longer than {self.client.limits.read:g}s to "
                               f"send its whole answer{kept}", self.partial) from None
        if not isinstance(exc, httpx.HTTPError):
            return False
        if self.partial is not None:
            self.partial.incomplete = True
        raise transport_error(exc, self.client.endpoint, self.partial) from None


def _json_content(body: Any) -> RequestContent:
    """A JSON body as the bytes request_bytes makes (what curl and exports show), or nothing to send."""
    if body is None:
        return {}
    # A body is the conversation: it goes only where the user pointed, never on to where a redirect says.
    return {"content": request_bytes(body), "headers": {"Content-Type": "application/json"},
            "follow_redirects": False}
