"""Reading a streamed chat completion: every event checked, every bound enforced, nothing received lost.

Bounds: a line (`max_line`), the reply (`max_reply` characters), the stream (`max_stream` bytes),
and the time between two chunks (`idle`): keep-alive comments or a trickle of bytes that never
completes a chunk do not count as progress, so neither keeps a dead reply open for ever.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Callable

import httpx

from tui.client.endpoint import Endpoint
from tui.client.errors import ClientError, MalformedChunk, ReadTimedOut, StreamErrorEvent, TooLarge
from tui.client.reply import ReplyAssembler
from tui.client.schemas import Chunk, ErrorDetail, decode, excerpt
from tui.client.sse import Event, SSEParser, SSETooLarge

if TYPE_CHECKING:
    from tui.client.http import Limits

DeltaCallback = Callable[[str, ReplyAssembler], Any]


async def read_stream(response: httpx.Response, assembler: ReplyAssembler, on_delta: DeltaCallback | None,
                      limits: "Limits", endpoint: Endpoint) -> bool:
    """Apply the stream's chunks to `assembler`; True when it ended with [DONE]."""
    reader = _Reader(assembler, on_delta, limits, endpoint)
    if endpoint.api != "chat":  # a Messages or Responses stream: each event read as the chat chunk it amounts to
        from tui.context.formats import FormatKind
        from tui.context.formats.replies import Translator
        reader.translator = Translator(FormatKind(endpoint.api))
    idle = limits.idle or limits.read
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(idle) as deadline:
            async for raw in response.aiter_bytes():
                reader.count(len(raw))
                for event in reader.parser.feed(raw):
                    deadline.reschedule(loop.time() + idle)
                    if reader.handle(event):
                        return True
            for event in reader.parser.close():
                if reader.handle(event):
                    return True
    except TimeoutError:
        raise ReadTimedOut(f"{endpoint.host} sent no chunk for longer than the read timeout ({idle:g}s; "
                           f"keep-alives and unfinished lines do not count){reader.kept()}", assembler.reply) from None
    except SSETooLarge as exc:
        raise TooLarge(f"{exc}; stopped reading{reader.kept()}", assembler.reply) from None
    return False


class _Reader:
    def __init__(self, assembler: ReplyAssembler, on_delta: DeltaCallback | None, limits: "Limits",
                 endpoint: Endpoint):
        self.assembler, self.on_delta, self.limits, self.endpoint = assembler, on_delta, limits, endpoint
        self.parser = SSEParser(limits.max_line)
        self.received = 0
        self.translator: Any = None

    def kept(self) -> str:
        return f"; kept the {len(self.assembler.reply.content)} characters received"

    def count(self, size: int) -> None:
        self.received += size
        if self.received > self.limits.max_stream:
            raise TooLarge(f"the stream passed {self.limits.max_stream:,} bytes; stopped reading{self.kept()}",
                           self.assembler.reply)

    def handle(self, event: Event) -> bool:
        """Apply one event; True at [DONE]."""
        data = event.data.strip()
        if data == "[DONE]":
            return True
        if event.event == "error":
            raise StreamErrorEvent(f"the server reported an error mid-stream: {self._error_text(data)}",
                                   self.assembler.reply)
        if self.translator is not None:
            return self._translated(event, data)
        try:
            chunk = decode(data, Chunk, "a streamed chunk", self.endpoint.redact)
        except ClientError as exc:
            raise MalformedChunk(f"the server sent a chunk that {exc.message.removeprefix('a streamed chunk ')}"
                                 f"{self.kept()}",
                                 self.assembler.reply) from None
        if chunk.error is not None:
            message = chunk.error.message if isinstance(chunk.error, ErrorDetail) else chunk.error
            raise StreamErrorEvent("the server reported an error mid-stream: "
                                   f"{excerpt(message or '?', self.endpoint.redact, 600)}", self.assembler.reply)
        self._apply(chunk)
        return False

    def _apply(self, chunk: Chunk) -> None:
        """One checked chunk into the reply, within the reply's size bound, and on to the view."""
        added = self.assembler.apply(chunk)
        if self.assembler.size > self.limits.max_reply:
            raise TooLarge(f"the reply passed {self.limits.max_reply:,} characters; stopped reading{self.kept()}",
                           self.assembler.reply)
        if self.on_delta:
            self.on_delta(added, self.assembler)

    def _translated(self, event: Event, data: str) -> bool:
        """A Messages or Responses event: its chat chunks applied; True at the reply's own last event."""
        import msgspec

        from tui.client.schemas import convert
        if not data:
            return False
        try:
            chunks = self.translator.event(event.event, msgspec.json.decode(data))
            checked = [convert(chunk, Chunk, "a streamed event") for chunk in chunks]
        except (msgspec.DecodeError, RecursionError, ClientError) as exc:
            raise MalformedChunk(f"the server sent an event that could not be read ({str(exc)[:200]}){self.kept()}",
                                 self.assembler.reply) from None
        if self.translator.error:
            raise StreamErrorEvent("the server reported an error mid-stream: "
                                   f"{excerpt(self.translator.error, self.endpoint.redact, 600)}", self.assembler.reply)
        for chunk in checked:
            self._apply(chunk)
        return bool(self.translator.done)

    def _error_text(self, data: str) -> str:
        try:
            chunk = decode(data, Chunk, "an error event")
            error = chunk.error
            text = error.message if isinstance(error, ErrorDetail) else error
        except ClientError:
            text = None
        return excerpt(text or data or "?", self.endpoint.redact, 600)
