"""A server-sent-events parser that follows the WHATWG spec, with bounded memory and linear cost.

Lines end in LF, CRLF or CR; a blank line dispatches the event; `data` lines are joined with LF;
lines starting with ':' are comments; a field without a colon has an empty value; one space after
the colon is dropped. Bytes are decoded as UTF-8 incrementally, so a character split across
network chunks is not damaged.

Bounds: a line, and an event's joined data, may hold at most `max_line` characters; past that the
parser raises `SSETooLarge` instead of buffering without end. Each fed chunk is scanned once and
an unfinished line is kept as a list of pieces, so a large chunk or a long line costs linear time.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass
from typing import Iterator

MAX_LINE = 8 * 1024 * 1024  # characters: far above any real chunk, far below what hurts
_LINE_END = re.compile(r"\r\n|\r|\n")


class SSETooLarge(ValueError):
    """A line or an event grew past the parser's bound."""


@dataclass
class Event:
    event: str = "message"
    data: str = ""
    id: str | None = None
    retry: int | None = None


class SSEParser:
    def __init__(self, max_line: int = MAX_LINE) -> None:
        self.max_line = max_line
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._tail: list[str] = []  # pieces of the line not yet ended
        self._tail_length = 0
        self._after_cr = False  # the last chunk ended in CR: a leading LF belongs to that line end
        self._data: list[str] = []
        self._data_length = 0
        self._event = ""
        self._id: str | None = None
        self._retry: int | None = None
        self._first = True
        self.lines = 0  # complete lines seen, comments included

    def feed(self, chunk: bytes) -> Iterator[Event]:
        text = self._decoder.decode(chunk)
        if self._first and text:
            text = text.lstrip("\ufeff")
            self._first = False
        yield from self._scan(text)

    def close(self) -> Iterator[Event]:
        """End of stream: a trailing event without its blank line is discarded, per the spec."""
        yield from self._scan(self._decoder.decode(b"", final=True))
        self._tail, self._tail_length = [], 0

    def _scan(self, text: str) -> Iterator[Event]:
        start = 0
        if self._after_cr and text.startswith("\n"):
            start = 1
        if text:
            self._after_cr = False
        for match in _LINE_END.finditer(text, start):
            piece = text[start:match.start()]
            line = self._take_tail(piece) if self._tail else piece
            self._check(len(line), "a line")
            start = match.end()
            self._after_cr = start == len(text) and match.group() == "\r"
            yield from self._line(line)
        if start < len(text):
            self._tail.append(text[start:])
            self._tail_length += len(text) - start
            self._check(self._tail_length, "a line")

    def _take_tail(self, piece: str) -> str:
        self._tail.append(piece)
        line = "".join(self._tail)
        self._tail, self._tail_length = [], 0
        return line

    def _check(self, length: int, what: str) -> None:
        if length > self.max_line:
            raise SSETooLarge(f"{what} of the event stream passed {self.max_line:,} characters without ending")

    def _line(self, line: str) -> Iterator[Event]:
        self.lines += 1
        if line == "":
            event = self._dispatch()
            if event is not None:
                yield event
            return
        if line.startswith(":"):
            return
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data_length += len(value) + 1
            self._check(self._data_length, "an event's data")
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self._id = value
        elif name == "retry" and value.isdigit() and len(value) < 16:
            self._retry = int(value)

    def _dispatch(self) -> Event | None:
        if not self._data:
            self._event = ""
            return None
        event = Event(self._event or "message", "\n".join(self._data), self._id, self._retry)
        self._data, self._data_length, self._event = [], 0, ""
        return event
