"""The tap's reverse proxy: every request goes to the upstream unchanged, its answer comes back as it arrives.

aiohttp's web server takes the client's requests (one dependency, asyncio-native, streamed responses,
and it cancels a handler whose client went away); httpx sends them on. The bytes are forwarded first:
each exchange is only *told* to the listeners (the recorder, the app), who copy what they need and do
their work elsewhere. A listener that fails is logged and never stops the traffic.

Safety: credential headers are forwarded and never kept on an exchange; a body over `max_body` bytes is
refused with 413 before it is read whole; an unreachable upstream is a 502 whose body says so; a request that has
been through this tap before (two taps in front of each other) is a 508, not forwarded (tui/tap/hops.py).
"""

from __future__ import annotations

import asyncio
import http.cookiejar
import json
import logging
import re
import time
from dataclasses import dataclass, field
from typing import Callable
from urllib.parse import unquote_plus, urlsplit

from tui.context.untrusted.redaction import credential_name, key_shaped
from tui.tap.encoded import NotUnpacked, unpacked
from tui.tap.header_lines import UNSENDABLE, ParserRefusals, sendable_headers
from tui.tap.hops import MAX_TAPS, HopVerdict, hop_list, new_tap_id, verdict, with_own_hop
from tui.tap.sent import kept_headers

import httpx
from aiohttp import web

log = logging.getLogger("ctxpane.tap")

DEFAULT_MAX_BODY = 32 * 1024 * 1024  # bytes of one request body
MAX_KEPT_REPLY = 32 * 1024 * 1024  # bytes of one reply kept for the recording (all of it is forwarded)
STOP_GRACE = 0.5  # seconds a stopping tap waits for the replies in flight before it cuts them (aiohttp waits
# this once more for them to end once cancelled)
STOPPED = "cut mid-reply: the tap was stopped"
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
                        "trailers", "transfer-encoding", "upgrade", "host", "content-length", "expect"})
# `expect: 100-continue` is answered by the tap's own server; the body is sent upstream whole
# Which headers and query parameters carry a credential is a rule on their names (credential_name: `x-api-key`,
# `x-litellm-api-key`, `X-Amz-Security-Token`, Gemini's `key`, …) and on the shape of their values (a scheme and
# a token, a known key prefix); these are forwarded unchanged, never shown or kept.
CREDENTIAL_HEADERS = frozenset({"proxy-authorization", "set-cookie", "openai-organization", "openai-project"})


def credential_header(name: str, value: str) -> bool:
    return name.lower() in CREDENTIAL_HEADERS or credential_name(name) or key_shaped(value)

Listener = Callable[[str, "Exchange"], None]


class NoCookies(http.cookiejar.CookiePolicy):
    """The tap's client keeps no cookie: a Set-Cookie goes back to the client that got it, and nothing the
    upstream set is ever added to a later request (of that client or another)."""

    netscape, rfc2965, hide_cookie2 = True, False, False

    def set_ok(self, cookie, request) -> bool:
        return False

    def return_ok(self, cookie, request) -> bool:
        return False

    def domain_return_ok(self, domain, request) -> bool:
        return False

    def path_return_ok(self, path, request) -> bool:
        return False


class UpstreamError(ValueError):
    """An --upstream the tap cannot use."""


@dataclass
class Exchange:
    """One request through the tap and what came back; never holds a credential header."""

    number: int
    method: str
    path: str  # the path and query as the client sent them, a key in the query as *** (shown_path)
    client: str  # its User-Agent (cut short) and address: for the list, never trusted
    body: bytes  # as the recording reads it: unpacked when the client compressed it
    request_type: str = ""
    started: float = field(default_factory=time.time)
    status: int | None = None
    content_type: str = ""
    content_encoding: str = ""
    chunks: list[bytes] = field(default_factory=list)  # the reply's bytes as they arrived (up to MAX_KEPT_REPLY)
    offsets: list[float] = field(default_factory=list)  # seconds after `started` each chunk was forwarded
    kept_bytes: int = 0
    forwarded_bytes: int = 0
    cut_kept: bool = False  # the reply outgrew MAX_KEPT_REPLY: forwarded whole, kept in part
    first_byte: float | None = None
    ended: float | None = None
    error: str = ""  # upstream unreachable, cut mid-stream, client gone
    client_gone: bool = False
    secrets: list[str] = field(default_factory=list, repr=False)  # credential values: to redact, never to keep
    wire: bytes | None = None  # the body as it came and goes upstream, when that is not `body` (compressed)
    unreadable: str = ""  # why the body cannot be read for the recording (it is forwarded all the same)
    after_end: str = ""  # what happened once the reply's last event had arrived (the client left): not a cut
    headers: list[list[str]] = field(default_factory=list)  # as sent, each credential's value *** (tui/tap/sent.py)

    @property
    def duration(self) -> float | None:
        return None if self.ended is None else self.ended - self.started

    def add(self, chunk: bytes) -> None:
        self.forwarded_bytes += len(chunk)
        if self.first_byte is None:
            self.first_byte = time.time() - self.started
        if self.kept_bytes + len(chunk) > MAX_KEPT_REPLY:
            self.cut_kept = True
            return
        self.chunks.append(chunk)
        self.offsets.append(time.time() - self.started)
        self.kept_bytes += len(chunk)


def upstream_parts(url: str) -> tuple[str, str]:
    """(origin, base path) of an --upstream URL: http(s) with a host; no credentials in it."""
    try:
        parts = urlsplit(url.strip())
        parts.port  # noqa: B018 - a port that is not a number (or out of range) raises here
    except ValueError as exc:
        raise UpstreamError(f"--upstream is not a URL the tap can use ({exc}; got {url[:80]!r})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UpstreamError(f"--upstream must be an http(s) URL with a host (got {url[:80]!r})")
    if parts.username or parts.password or "@" in parts.netloc:
        raise UpstreamError("--upstream must not hold a user or password: the client's own headers are forwarded")
    if parts.query or parts.fragment:
        raise UpstreamError("--upstream takes no query or fragment")
    return f"{parts.scheme}://{parts.netloc}", parts.path.rstrip("/")


def upstream_target(origin: str, base: str, raw_path: str) -> str:
    """Where a client's path goes: as it is when it is under the upstream's path, else under that path."""
    path = raw_path if raw_path.startswith("/") else "/" + raw_path
    if not base or path == base or path.startswith(base + "/") or path.startswith(base + "?"):
        return origin + path
    return origin + base + path


def request_target(target: str, origin: str) -> bytes:
    """The request line's target as the client wrote it (httpx would drop `.` and `..` segments and
    percent-encode characters such as `{` or `"`: a changed path, and a broken signature over it)."""
    return target[len(origin):].encode("utf-8", "surrogateescape")


def credential_values(headers: list[tuple[str, str]]) -> list[str]:
    """The secrets in credential headers (a whole value, the token after its scheme, each cookie's value):
    what must be taken out of anything recorded, should an upstream echo it back."""
    found: set[str] = set()
    for key, value in headers:
        if not credential_header(key, value):
            continue
        pieces = [value, value.split(" ", 1)[-1]]
        if key.lower() == "cookie":
            pieces += [part.split("=", 1)[-1].strip() for part in value.split(";")]
        found.update(piece.strip() for piece in pieces if len(piece.strip()) >= 8)
    return sorted(found, key=len, reverse=True)  # the longest first: a value before the token inside it


def shown_path(raw_path: str) -> tuple[str, list[str]]:
    """The path and query as they may be shown and kept (each credential parameter's value as ***), and those
    values (as sent and decoded): forwarded unchanged, redacted from anything recorded."""
    path, mark, query = raw_path.partition("?")
    if ";" in path:  # parameters in the path itself (`/v1;api_key=K/chat`) are read like the query's
        shown, in_path = shown_path("?" + path.replace("/", "&/&"))
        path = shown[1:].replace("&/&", "/")
    else:
        in_path = []
    if not mark:
        return path, in_path
    secrets, pairs = in_path, []
    for pair in re.split(r"([&;])", query):
        name, equals, value = pair.partition("=")
        if equals and value and (credential_name(unquote_plus(name)) or key_shaped(unquote_plus(value))):
            secrets += [piece for piece in {value, unquote_plus(value)} if len(piece) >= 4]
            pair = f"{name}=***"
        pairs.append(pair)
    return f"{path}?{''.join(pairs)}", secrets


def error_body(status: int, message: str, kind: str) -> bytes:
    return json.dumps({"error": {"message": message, "type": kind, "code": status}}).encode()


class TapServer:
    def __init__(self, upstream: str, host: str = "127.0.0.1", port: int = 8089, max_body: int = DEFAULT_MAX_BODY,
                 read_timeout: float = 600.0, connect_timeout: float = 10.0):
        self.upstream = upstream.strip().rstrip("/")
        self.origin, self.base = upstream_parts(upstream)
        self.host, self.port, self.max_body, self.read_timeout = host, port, max_body, read_timeout
        self.listeners: list[Listener] = []
        self.count = 0
        self.tap_id = new_tap_id()  # named in the hop header of what it forwards: a request back here is a loop
        self.loops_refused = 0  # requests answered 508 (neither counted in `count` nor recorded)
        self.active = 0
        self._runner: web.AppRunner | None = None
        self._timeout = httpx.Timeout(connect_timeout, read=read_timeout, write=read_timeout, pool=None)
        self.http: httpx.AsyncClient | None = None
        self._closing: set[asyncio.Future] = set()  # upstream answers being closed after their client left
        self.stopping = False  # the tap is closing: a reply still streaming is cut, not waited for
        self._idle = asyncio.Event()  # set while no request is in flight (a stop waits for the last one's end)
        self._idle.set()

    # -- life ---------------------------------------------------------------------------------------
    async def start(self) -> str:
        """Listen; returns the base URL clients use (…/v1 when the upstream's path is /v1)."""
        self.http = httpx.AsyncClient(timeout=self._timeout, follow_redirects=False, trust_env=False,
                                      cookies=http.cookiejar.CookieJar(policy=NoCookies()),
                                      limits=httpx.Limits(max_connections=None, max_keepalive_connections=20))
        self.http.headers.clear()  # only the client's own headers go upstream (no httpx defaults added)
        for name in ("aiohttp.server", "aiohttp.web", "aiohttp.access"):  # their text may quote a key
            logger = logging.getLogger(name)
            if not any(isinstance(f, ParserRefusals) for f in logger.filters):
                logger.addFilter(ParserRefusals())
        app = web.Application(client_max_size=self.max_body)
        app.router.add_route("*", "/{tail:.*}", self.handle)
        # auto_decompress off: a compressed request body is forwarded as the client sent it, under its own label
        # shutdown_timeout: how long a stop waits for replies in flight before it cuts them (they would run on)
        self._runner = web.AppRunner(app, handler_cancellation=True, access_log=None, auto_decompress=False,
                                     shutdown_timeout=STOP_GRACE)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        sockets = [s for s in (site._server.sockets if site._server else [])]  # noqa: SLF001 - the bound port
        if sockets:
            self.port = sockets[0].getsockname()[1]
        return self.url

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}{self.base}"

    async def close(self) -> None:
        """Stop listening; a reply still streaming gets STOP_GRACE seconds, then is cut (recorded as it stands)."""
        self.stopping = True
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        # aiohttp cancels a handler past the grace and returns: its own end (what the recorder is told) comes later
        try:
            async with asyncio.timeout(STOP_GRACE * 4):
                await self._idle.wait()
        except TimeoutError:
            log.warning("%d requests had not ended %g s after the stop", self.active, STOP_GRACE * 4)
        if self.http is not None:
            await self.http.aclose()
            self.http = None

    def tell(self, kind: str, exchange: Exchange) -> None:
        for listener in list(self.listeners):
            try:
                listener(kind, exchange)
            except Exception:  # noqa: BLE001 - recording never stops the traffic
                log.exception("a tap listener failed on %s of request %d", kind, exchange.number)

    # -- one request --------------------------------------------------------------------------------
    async def handle(self, request: web.Request) -> web.StreamResponse:
        hops = hop_list(request.raw_headers)
        refusal = verdict(hops, self.tap_id)
        if refusal is not HopVerdict.FORWARD:
            return self.loop_refused(refusal, len(hops))
        if request.content_length is not None and request.content_length > self.max_body:
            return self.too_large(request.content_length)
        try:
            body = await self.read_body(request)
        except TimeoutError:  # a client that stalls mid-body holds nothing for ever
            return web.Response(status=408, content_type="application/json", body=error_body(
                408, f"ctxpane tap: the request body stopped arriving (nothing for {self.read_timeout:g} s)",
                "request_timeout"))
        if body is None:
            return self.too_large(None)
        wire, unreadable = None, ""
        if request.headers.get("Content-Encoding", "").strip():  # forwarded as it came; unpacked for the record
            wire = body
            try:
                body = await asyncio.to_thread(unpacked, wire, request.headers["Content-Encoding"], self.max_body)
            except NotUnpacked as exc:
                body, unreadable = b"", str(exc)
        self.count += 1
        user_agent = request.headers.get("User-Agent", "")[:60]
        path, in_query = shown_path(request.raw_path)
        exchange = Exchange(self.count, request.method, path, f"{user_agent or '?'} {request.remote or ''}"
                            .strip(), body, request.headers.get("Content-Type", "")[:200])
        exchange.wire, exchange.unreadable = wire, unreadable
        # the header bytes as received (httpx would refuse a str value that is not ASCII: a UTF-8 X-Title)
        headers = with_own_hop([(k, v) for k, v in request.raw_headers if k.decode("latin-1").lower() not in HOP_BY_HOP],
                               hops, self.tap_id)
        exchange.secrets = sorted(set(credential_values(list(request.headers.items())) + in_query), key=len,
                                  reverse=True)
        exchange.headers = kept_headers(request.raw_headers, exchange.secrets)
        target = upstream_target(self.origin, self.base, request.raw_path)
        self.active += 1
        self._idle.clear()
        try:
            return await self.forward(request, exchange, target, headers)
        finally:
            exchange.ended = time.time()
            self.tell("end", exchange)
            self.active -= 1
            if not self.active:
                self._idle.set()

    async def read_body(self, request: web.Request) -> bytes | None:
        """The whole body, or None once it passes max_body (a chunked body has no length to check first);
        TimeoutError when nothing of it comes for read_timeout seconds."""
        pieces, size = [], 0
        while True:
            async with asyncio.timeout(self.read_timeout):
                piece = await request.content.readany()
            if not piece:
                break
            size += len(piece)
            if size > self.max_body:
                return None
            pieces.append(piece)
        return b"".join(pieces)

    def loop_refused(self, refusal: HopVerdict, taps: int) -> web.Response:
        """508 at once (its body unread, nothing forwarded or recorded): answering is what ends the loop."""
        self.loops_refused += 1
        if refusal is HopVerdict.LOOP:
            message = (f"ctxpane tap: loop detected: this request has already passed through this tap, which would "
                       f"forward it to itself through its upstream {self.upstream} (point --upstream at the server, "
                       f"not at a tap in front of this one)")
        else:
            message = (f"ctxpane tap: loop detected: this request has already passed through {taps} taps (at most "
                       f"{MAX_TAPS}); not forwarded to the upstream {self.upstream}")
        log.warning("%s", message)
        return web.Response(status=508, content_type="application/json",
                            body=error_body(508, message, "loop_detected"))

    def too_large(self, size: int | None) -> web.Response:
        said = f" ({size:,} bytes)" if size is not None else ""
        return web.Response(status=413, content_type="application/json", body=error_body(
            413, f"ctxpane tap: the request body{said} is over the tap's limit of {self.max_body:,} bytes "
                 "(raise it with --max-body)", "request_too_large"))

    async def forward(self, request: web.Request, exchange: Exchange, target: str, headers: list) -> web.StreamResponse:
        assert self.http is not None
        self.tell("request", exchange)
        try:
            upstream = await self.http.send(self.http.build_request(
                request.method, target, headers=headers, content=exchange.body if exchange.wire is None else exchange.wire,
                extensions={"target": request_target(target, self.origin)}), stream=True)
        except asyncio.CancelledError:  # the client left (or the tap stopped) before the upstream answered
            if self.stopping:
                exchange.error = f"{STOPPED} before the upstream answered"
            else:
                exchange.client_gone, exchange.error = True, ("the client went away before the upstream answered: "
                                                              "the upstream request was cancelled")
            raise
        except httpx.HTTPError as exc:
            exchange.status, exchange.error = 502, f"the upstream could not be reached: {type(exc).__name__}: {exc}"
            return web.Response(status=502, content_type="application/json", body=error_body(
                502, f"ctxpane tap: the upstream {self.upstream} could not be reached ({type(exc).__name__}: "
                     f"{str(exc)[:300]})", "upstream_unreachable"))
        try:
            exchange.status = upstream.status_code
            exchange.content_type = upstream.headers.get("content-type", "")[:200]
            exchange.content_encoding = upstream.headers.get("content-encoding", "")[:100].lower()
            reason = upstream.reason_phrase if not UNSENDABLE.search(upstream.reason_phrase or "") else None
            response = web.StreamResponse(status=upstream.status_code, reason=reason or None)
            for key, value in sendable_headers(upstream.headers.raw, exchange.number):
                if key.lower() not in HOP_BY_HOP or (key.lower() == "content-length" and not self.chunked(upstream)):
                    response.headers.add(key, value)
            self.tell("head", exchange)
            await response.prepare(request)
            async for chunk in upstream.aiter_raw():
                await response.write(chunk)
                exchange.add(chunk)
                self.tell("chunk", exchange)
            await response.write_eof()
            return response
        except httpx.HTTPError as exc:  # the upstream broke off mid-reply: the client sees the same cut
            exchange.error = f"the upstream broke off mid-reply: {type(exc).__name__}: {str(exc)[:300]}"
            if request.transport is not None:
                request.transport.close()
            return response
        except (ConnectionResetError, asyncio.CancelledError) as exc:
            if self.stopping and isinstance(exc, asyncio.CancelledError):
                exchange.error = f"{STOPPED} (what arrived until then is kept)"
            else:
                exchange.client_gone, exchange.error = True, "the client went away mid-reply: the upstream request " \
                                                             "was cancelled"
            if isinstance(exc, asyncio.CancelledError):
                raise
            return response
        finally:
            await self.close_upstream(upstream)

    async def close_upstream(self, upstream: httpx.Response) -> None:
        """Close the upstream's answer (an unfinished one closes its connection: the upstream stops). Shielded: a
        second cancellation (the client gone) must not leave the upstream talking to a socket nobody reads."""
        closing = asyncio.ensure_future(upstream.aclose())
        self._closing.add(closing)
        closing.add_done_callback(self._closing.discard)
        await asyncio.shield(closing)  # cancelled meanwhile: the close goes on by itself (`_closing` holds it)

    @staticmethod
    def chunked(upstream: httpx.Response) -> bool:
        return "chunked" in upstream.headers.get("transfer-encoding", "").lower()
