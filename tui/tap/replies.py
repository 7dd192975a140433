"""What came back from the upstream, read for the recording: the bytes (decompressed), the reply, the stream.

Read with ctxpane's own checked reader (tui/client), streamed (SSE) or whole; anything odd is recorded as
what it is (an incomplete reply with the reason), never raised.
"""

from __future__ import annotations

import zlib

from tui.context.formats import FormatKind
from tui.tap.server import Exchange

RAW_END_KEPT = 256 * 1024  # characters of the raw streamed reply kept from each end in the record
# A reply's text in its record (and in the transcript the file shows): this much from each end, the middle of a longer
# one cut and said. The reply was forwarded whole; a file of long replies still opens (its reader's bound is 256 MiB).
TEXT_END_KEPT = 1024 * 1024
TEXT_END_KEPT_LATE = 16 * 1024  # once a conversation's kept reply texts reach TEXT_BUDGET
TEXT_BUDGET = 48 * 1024 * 1024
MAX_OFFSETS = 20_000  # chunk arrival times kept in the record


def kept_ends(text: str, each: int) -> tuple[str, int]:
    """`text` with only `each` characters of each end when it is longer (the cut said in its place), and how many
    characters were cut."""
    if len(text) <= 2 * each:
        return text, 0
    cut = len(text) - 2 * each
    return f"{text[:each]}\n[… {cut:,} characters cut from the middle by ctxpane tap: forwarded whole, kept in part …]\n" \
           f"{text[-each:]}", cut


def decoded(exchange: Exchange) -> bytes:
    raw = b"".join(exchange.chunks)
    encoding = exchange.content_encoding
    if encoding in ("gzip", "deflate"):
        try:
            return zlib.decompressobj(47 if encoding == "gzip" else zlib.MAX_WBITS).decompress(raw, 64 * 2 ** 20)
        except zlib.error:
            return b""
    return b"" if encoding not in ("", "identity") else raw


def _assembler():
    """ctxpane's ReplyAssembler, its text kept in pieces and joined once: a reply of many megabytes in many
    chunks is read in linear time (growing one string chunk by chunk copies it again each time)."""
    from tui.client.reply import ReplyAssembler

    class Joined(ReplyAssembler):
        def __init__(self) -> None:
            super().__init__()
            self.parts: dict[str, list[str]] = {"content": [], "reasoning": []}
            self.arguments: dict[int, list[str]] = {}

        def apply(self, chunk) -> str:
            added = super().apply(chunk)
            for name, parts in self.parts.items():
                parts.append(getattr(self.reply, name))
                setattr(self.reply, name, "")
            for index, call in self._calls.items():
                self.arguments.setdefault(index, []).append(call["function"]["arguments"])
                call["function"]["arguments"] = ""
            return added

        def joined(self):
            for name, parts in self.parts.items():
                setattr(self.reply, name, "".join(parts))
            for index, parts in self.arguments.items():
                self._calls[index]["function"]["arguments"] = "".join(parts)
            return self.reply

    return Joined()


def reply_of(exchange: Exchange, kind: FormatKind = FormatKind.CHAT):
    """The reply the upstream sent, read with ctxpane's own checked reader (streamed or whole)."""
    return wire_reply(exchange, kind)[0]


def wire_reply(exchange: Exchange, kind: FormatKind = FormatKind.CHAT):
    """The reply, and for a Messages or Responses reply what read it (its response id, its own usage)."""
    from tui.client.reply import Reply

    raw = decoded(exchange)
    if exchange.status != 200:
        text = raw.decode("utf-8", "replace")[:4000]
        return Reply(incomplete=True, error=exchange.error or f"the upstream answered {exchange.status}: {text}"), None
    if kind is not FormatKind.CHAT:
        return translated_reply(exchange, raw, kind)
    return chat_reply(exchange, raw), None


def translated_reply(exchange: Exchange, raw: bytes, kind: FormatKind):
    """A Messages or Responses reply, each event (or the whole answer) read as the chat chunk it amounts to."""
    import msgspec

    from tui.client.schemas import Chunk, convert
    from tui.client.sse import SSEParser
    from tui.context.formats.replies import Translator

    assembler, translator, problem = _assembler(), Translator(kind), ""
    if "text/event-stream" not in exchange.content_type:
        try:
            assembler.apply(convert(translator.whole(msgspec.json.decode(raw)), Chunk, "the reply"))
        except Exception as exc:  # noqa: BLE001 - an odd reply is recorded as what it is
            problem = f"the reply could not be read: {exc}"[:4000]
    else:
        parser = SSEParser()
        for event in list(parser.feed(raw)) + list(parser.close()):
            try:
                for chunk in translator.event(event.event, msgspec.json.decode(event.data)):
                    assembler.apply(convert(chunk, Chunk, "a streamed event"))
            except Exception as exc:  # noqa: BLE001
                problem = f"an event could not be read: {exc}"[:4000]
            if translator.done:
                break
    reply = assembler.joined()
    cut = cut_error(exchange, translator.done)
    reply.incomplete = not translator.done or bool(cut) or bool(translator.error)
    reply.error = cut or translator.error or problem or (
        None if translator.done else "the stream ended before its last event")
    return reply, translator


def cut_error(exchange: Exchange, whole: bool) -> str:
    """What cut the reply short: the exchange's error, unless the reply's own last event (or its whole body) arrived
    first. A client that closes the connection as soon as it holds the last event (Codex does) cut nothing: the
    exchange keeps the fact (client_gone, and what happened in `after_end`), not an error."""
    if not exchange.error or not whole:
        return exchange.error
    said = CLIENT_CLOSED if exchange.client_gone else f"after the reply's last event: {exchange.error}"
    exchange.after_end, exchange.error = said[:4000], ""
    return ""


CLIENT_CLOSED = "the client closed the connection after the reply's last event (the reply arrived whole)"


def chat_reply(exchange: Exchange, raw: bytes):
    from tui.client.reply import Reply, reply_from_response
    from tui.client.schemas import Chunk, decode
    from tui.client.sse import SSEParser
    if "text/event-stream" not in exchange.content_type:
        try:
            reply = reply_from_response(decode(raw, Chunk, "the reply"))
        except Exception as exc:  # noqa: BLE001 - an odd reply is recorded as what it is
            return Reply(incomplete=True, error=exchange.error or f"the reply could not be read: {exc}"[:4000])
        cut = cut_error(exchange, True)  # the whole body was read: nothing after it can cut it
        reply.incomplete = bool(cut)
        reply.error = cut or None
        return reply
    assembler, parser, done = _assembler(), SSEParser(), False
    problem = ""
    for event in list(parser.feed(raw)) + list(parser.close()):
        data = event.data.strip()
        if data == "[DONE]":
            done = True
            break
        try:
            assembler.apply(decode(data, Chunk, "a streamed chunk"))
        except Exception as exc:  # noqa: BLE001
            problem = f"a chunk could not be read: {exc}"[:4000]
    reply = assembler.joined()
    # [DONE], or a finish_reason with the usage after it: the server sent all it had (a client may leave then)
    ended = done or bool(exchange.client_gone and reply.finish_reason and reply.usage)
    cut = cut_error(exchange, ended)
    reply.incomplete = not ended or bool(cut)
    reply.error = cut or problem or (None if ended else "the stream ended without [DONE]")
    return reply


def stream_record(exchange: Exchange) -> dict:
    """The reply as it streamed: its raw text, and when each piece was forwarded (seconds after the request)."""
    raw = b"".join(exchange.chunks).decode("utf-8", "replace") if not exchange.content_encoding else ""
    return {"status": exchange.status, "content_type": exchange.content_type, "chunks": len(exchange.chunks),
            "bytes": exchange.forwarded_bytes, "first_byte": _rounded(exchange.first_byte),
            "duration": _rounded(exchange.duration),
            "offsets": [_rounded(o) for o in exchange.offsets[:MAX_OFFSETS]],
            "raw": kept_ends(raw, RAW_END_KEPT)[0], "raw_cut": len(raw) > 2 * RAW_END_KEPT or exchange.cut_kept,
            "client_gone": exchange.client_gone, "error": exchange.error[:4000],
            **({"after_end": exchange.after_end[:4000]} if exchange.after_end else {})}


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 6)
