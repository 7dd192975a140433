"""Running a tap (and a small misbehaving upstream) on event loops of their own, for synchronous clients.

The openai SDK, curl and httpx talk to them over real loopback sockets, as any program would.
`LoopbackUpstream` is an aiohttp server whose first path segment picks the behaviour:
/echo (what arrived: method, path, headers, body digest), /slow (a stream that goes on until the
client leaves, noting when it does), /cut (a stream broken off mid-reply), /ok (a short stream), /flood (?n= pieces of ?size= characters, fast),
/late (no answer until the client leaves), /echokey (a stream whose error event quotes the request's headers),
/reply (a whole reply in the format the path ends in: chat completions, Messages or Responses; ?text= its text),
/linger (a streamed reply in that format whose connection stays open after its last event, until the client
leaves, as a slow upstream's may).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
from pathlib import Path

import pytest
from aiohttp import web

from waiting import eventually, until


class LoopThread:
    """An asyncio loop in a thread: `run(coro)` waits for a coroutine run there."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro, timeout: float = 60):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


def served(app: web.Application) -> tuple[LoopThread, int]:
    """An aiohttp app served on 127.0.0.1 from a loop of its own: the loop and the port it listens on."""
    async def start() -> int:
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        return site._server.sockets[0].getsockname()[1]  # noqa: SLF001

    loop = LoopThread()
    return loop, loop.run(start())


class RunningTap:
    def __init__(self, upstream: str, folder: Path, **options) -> None:
        from tui.tap.runner import Tap

        self.events: list[tuple[str, int]] = []
        self.loop = LoopThread()
        options.setdefault("port", 0)  # (a port of the test's choosing: two taps whose upstreams are each other)
        self.tap = Tap(upstream, folder, on_change=lambda kind, t: self.events.append((kind, t.exchange.number)),
                       **options)
        self.url = self.loop.run(self.tap.start())
        self.folder = folder

    @property
    def recorder(self):
        return self.tap.recorder

    def settle(self, timeout: float = 30) -> None:
        """Wait until every request through the tap has ended and is recorded."""
        until(lambda: not self.tap.server.active, timeout, "every request through the tap to end", poll=0.005)
        self.recorder.drain()

    def stop(self) -> None:
        self.loop.run(self.tap.close())
        self.loop.stop()


def sse(item: dict) -> bytes:
    return f"data: {json.dumps(item)}\n\n".encode()


def piece(text: str, finish: str | None = None) -> dict:
    return {"id": "u1", "object": "chat.completion.chunk", "model": "loop-model",
            "choices": [{"index": 0, "delta": {"content": text} if text else {}, "finish_reason": finish}]}


SCENARIOS = frozenset({"ok", "cut", "slow", "echo", "echokey", "gz", "usage", "late", "flood", "reply",
                       "linger"})  # the paths it serves


def whole_reply(path: str, text: str) -> dict:
    """A whole (not streamed) reply of the format `path` ends in, as the real APIs shape it."""
    if path.rstrip("/").endswith("/messages"):
        return {"id": "msg_loop", "type": "message", "role": "assistant", "model": "loop-model",
                "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
                "usage": {"input_tokens": 10, "output_tokens": 2}}
    if path.rstrip("/").endswith("/responses"):
        return {"id": f"resp_loop{abs(hash(text)) % 10**8}", "object": "response", "created_at": 1, "model": "loop-model",
                "status": "completed", "output": [{"type": "message", "id": "msg_1", "role": "assistant",
                                                   "status": "completed", "content": [
                                                       {"type": "output_text", "text": text, "annotations": []}]}],
                "usage": {"input_tokens": 10, "output_tokens": 2, "total_tokens": 12}}
    return {"id": "c", "object": "chat.completion", "model": "loop-model", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}}


def streamed_events(path: str, text: str) -> list[bytes]:
    """A streamed reply of the format `path` ends in, its last event included (message_stop, response.completed,
    [DONE])."""
    def event(name: str, data: dict) -> bytes:
        return f"event: {name}\ndata: {json.dumps({'type': name, **data})}\n\n".encode()
    if path.rstrip("/").endswith("/messages"):
        message = {**whole_reply(path, ""), "content": [], "stop_reason": None}
        return [event("message_start", {"message": message}),
                event("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}),
                event("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": text}}),
                event("content_block_stop", {"index": 0}),
                event("message_delta", {"delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}}),
                event("message_stop", {})]
    if path.rstrip("/").endswith("/responses"):
        done = whole_reply(path, text)
        return [event("response.created", {"response": {**done, "status": "in_progress", "output": []}}),
                event("response.output_text.delta", {"item_id": "msg_1", "output_index": 0, "content_index": 0,
                                                     "delta": text}),
                event("response.completed", {"response": done})]
    return [sse(piece(text)), sse({**piece("", "stop"), "usage": {"prompt_tokens": 10, "completion_tokens": 2,
                                                                 "total_tokens": 12}}), b"data: [DONE]\n\n"]


class LoopbackUpstream:
    def __init__(self) -> None:
        self.seen: list[dict] = []
        self.left = asyncio.Event()  # set on the upstream's loop when a /slow client went away
        self.loop = LoopThread()
        self.port = self.loop.run(self._start())
        self.url = f"http://127.0.0.1:{self.port}"

    async def _start(self) -> int:
        self.left = asyncio.Event()
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self.handle)
        # auto_decompress off: `seen` holds the bytes as they arrived (a compressed body too)
        self.runner = web.AppRunner(app, handler_cancellation=True, access_log=None, auto_decompress=False)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        return site._server.sockets[0].getsockname()[1]  # noqa: SLF001

    def stop(self) -> None:
        self.loop.run(self.runner.cleanup())
        self.loop.stop()

    def client_left(self, timeout: float = 10) -> bool:
        async def wait() -> bool:
            try:
                await asyncio.wait_for(self.left.wait(), timeout)
                return True
            except TimeoutError:
                return False
        return self.loop.run(wait(), timeout + 5)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        scenario = request.path.strip("/").split("/")[0]
        if scenario in SCENARIOS:  # (not the tap's own probes of the upstream, which may land between a test's
            # request and its look at `seen`: a first request through a fresh tap sets them off)
            self.seen.append({"method": request.method, "path": request.raw_path,
                              "headers": list(request.headers.items()), "body": body})
        if scenario == "echo":
            return web.json_response({"method": request.method, "path": request.raw_path,
                                      "headers": [[k, v] for k, v in request.headers.items()],
                                      "length": len(body), "sha256": hashlib.sha256(body).hexdigest()},
                                     headers={"X-Upstream": "loop", "Set-Cookie": "upstream-session=abc"})
        if scenario == "echokey":  # a stream whose error event quotes every header it was sent, as some do
            response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await response.prepare(request)
            await response.write(sse(piece("before the error ")))
            quoted = "; ".join(f"{k}: {v}" for k, v in request.headers.items())
            await response.write(sse({"error": {"message": f"refused, you sent {quoted}"}}))
            await response.write_eof()
            return response
        if scenario == "gz":  # a whole reply, compressed when the client accepts it
            answer = web.json_response({"id": "g", "object": "chat.completion", "model": "loop-model", "choices": [
                {"index": 0, "message": {"role": "assistant", "content": "squeezed " * 50}, "finish_reason": "stop"}]})
            answer.enable_compression()
            return answer
        if scenario == "usage":  # a whole reply whose usage claims ?prompt= prompt tokens (a figure that may lie)
            model = json.loads(body or b"{}").get("model", "loop-model")
            return web.json_response({"id": "u", "object": "chat.completion", "model": model, "choices": [
                {"index": 0, "message": {"role": "assistant", "content": "counted"}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": int(request.query.get("prompt", "10")), "completion_tokens": 3}})
        if scenario == "late":  # no answer at all until the client leaves (a long prompt being processed)
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                self.left.set()
                raise
        if scenario == "flood":  # ?n= pieces of ?size= characters, as fast as they go
            response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await response.prepare(request)
            text = "w" * int(request.query.get("size", "100"))
            for _ in range(int(request.query.get("n", "10"))):
                await response.write(sse(piece(text)))
            await response.write(sse(piece("", "stop")) + b"data: [DONE]\n\n")
            await response.write_eof()
            return response
        if scenario == "reply":  # (?task=: a Messages reply that also calls Claude Code's Task tool with that prompt)
            answer = whole_reply(request.path, request.query.get("text", "fine"))
            if "task" in request.query and "content" in answer:
                answer["content"].append({"type": "tool_use", "id": "toolu_task1", "name": "Task", "input": {
                    "description": "look around", "prompt": request.query["task"]}})
                answer["stop_reason"] = "tool_use"
            return web.json_response(answer)
        if scenario == "linger":  # the whole reply, then the connection held open until the client leaves
            response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await response.prepare(request)
            for event in streamed_events(request.path, request.query.get("text", "fine")):
                await response.write(event)
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                self.left.set()
                raise
            await response.write_eof()
            return response
        if scenario not in ("ok", "cut", "slow"):
            return web.json_response({"error": {"message": "no such scenario"}}, status=404)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        if scenario == "ok":
            for text in ("one ", "two ", "three"):
                await response.write(sse(piece(text)))
            await response.write(sse(piece("", "stop")) + b"data: [DONE]\n\n")
            await response.write_eof()
            return response
        if scenario == "cut":
            for text in ("partial ", "reply "):
                await response.write(sse(piece(text)))
            transport = request.transport  # the pieces handed to the socket first: abort() drops what it holds
            await eventually(lambda: not transport.get_write_buffer_size(), 10, "the pieces to leave", poll=0.005)
            transport.abort()  # broken off: no end of the chunked body
            return response
        pieces = int(request.query.get("n", "600"))
        try:  # slow: a piece every 50 ms until the client leaves, or ?n= pieces then [DONE] (a slow model's pace)
            for number in range(pieces):
                await response.write(sse(piece(f"{number} ")))
                await asyncio.sleep(0.05)
        except (asyncio.CancelledError, ConnectionResetError):
            self.left.set()
            raise
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response


@pytest.fixture(scope="module")
def upstream():
    """A loopback upstream for one test module (imported by the modules that use it)."""
    server = LoopbackUpstream()
    yield server
    server.stop()


# -- the tap in the app (TapApp) -----------------------------------------------------------------------------------

async def listening(pilot, app) -> str:
    """The tap app's address, once it listens."""
    await eventually(lambda: getattr(app, "url", None), pilot=pilot, what="the tap app to listen")
    return app.url


def listed_line(app, number: int) -> str:
    """The list's line for request `number`, as plain text ("" while it is not listed)."""
    from textual.widgets import OptionList
    from textual.widgets.option_list import OptionDoesNotExist
    try:
        prompt = app.query_one("#tap-list", OptionList).get_option(f"r{number}").prompt
    except OptionDoesNotExist:
        return ""
    return getattr(prompt, "plain", str(prompt))


async def ended_and_listed(pilot, app, count: int) -> None:
    """Wait until `count` requests went through the tap app, each ended, recorded and its line drawn from that end
    (the recorder tells the app from its thread: the line, and the pane of the newest, follow a loop turn later)."""
    from tui.app.tap_app import request_label

    def shown() -> bool:
        tapped = app.tap.recorder.tapped
        return len(tapped) == count and all(
            t.done and listed_line(app, number) == request_label(t).plain for number, t in tapped.items())
    await eventually(shown, pilot=pilot, what=lambda: f"{count} requests ended and listed: "
                     f"{[listed_line(app, number) for number in app.tap.recorder.tapped]}")


class ResponsesUpstream:
    """A loopback Responses API that keeps state, as OpenAI's does with store: each response has an id a later
    request may name in previous_response_id (llama.cpp refuses previous_response_id, so it is played here)."""

    def __init__(self) -> None:
        from aiohttp import web

        self.count = 0
        self.loop = LoopThread()
        app = web.Application()
        app.router.add_post("/v1/responses", self.answer)

        async def start() -> int:
            self.runner = web.AppRunner(app, access_log=None)
            await self.runner.setup()
            site = web.TCPSite(self.runner, "127.0.0.1", 0)
            await site.start()
            return site._server.sockets[0].getsockname()[1]  # noqa: SLF001

        self.url = f"http://127.0.0.1:{self.loop.run(start())}/v1"

    async def answer(self, request):
        from aiohttp import web

        self.count += 1
        await request.read()
        return web.json_response({"id": f"resp_{self.count}", "object": "response", "status": "completed",
                                  "model": "gpt-5", "output": [{"type": "message", "role": "assistant", "content": [
                                      {"type": "output_text", "text": f"answer {self.count}"}]}],
                                  "usage": {"input_tokens": 10, "output_tokens": 2, "total_tokens": 12}})

    def stop(self) -> None:
        self.loop.run(self.runner.cleanup())
        self.loop.stop()
