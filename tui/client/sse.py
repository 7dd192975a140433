"""A server-sent-events parser that follows the WHATWG spec.

Lines end in LF, CRLF or CR; a blank line dispatches the event; `data` lines are joined with LF;
lines starting with ':' are comments; a field without a colon has an empty value; one space after
the colon is dropped. Bytes are decoded as UTF-8 incrementally, so a character split across
network chunks is not damaged.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass
from typing import Iterator


@dataclass
class Event:
    event: str = "message"
    data: str = ""
    id: str | None = None
    retry: int | None = None


class SSEParser:
    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._buffer = ""
        self._data: list[str] = []
        self._event = ""
        self._id: str | None = None
        self._retry: int | None = None
        self._first = True

    def feed(self, chunk: bytes) -> Iterator[Event]:
        text = self._decoder.decode(chunk)
        if self._first and text:
            text = text.lstrip("\ufeff")
            self._first = False
        self._buffer += text
        yield from self._drain(final=False)

    def close(self) -> Iterator[Event]:
        """End of stream: a trailing event without its blank line is discarded, per the spec."""
        self._buffer += self._decoder.decode(b"", final=True)
        yield from self._drain(final=True)

    def _drain(self, final: bool) -> Iterator[Event]:
        while True:
            cut = _line_end(self._buffer, final)
            if cut is None:
                return
            line, skip = cut
            rest = self._buffer[line + skip:]
            current, self._buffer = self._buffer[:line], rest
            event = self._line(current)
            if event is not None:
                yield event

    def _line(self, line: str) -> Event | None:
        if line == "":
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self._id = value
        elif name == "retry" and value.isdigit():
            self._retry = int(value)
        return None

    def _dispatch(self) -> Event | None:
        if not self._data:
            self._event = ""
            return None
        event = Event(self._event or "message", "\n".join(self._data), self._id, self._retry)
        self._data, self._event = [], ""
        return event


def _line_end(buffer: str, final: bool) -> tuple[int, int] | None:
    """Index of the first line end and its length; a CR at the very end waits for a possible LF."""
    lf, cr = buffer.find("\n"), buffer.find("\r")
    if cr == -1 or (lf != -1 and lf < cr):
        return (lf, 1) if lf != -1 else None
    if cr + 1 < len(buffer):
        return cr, 2 if buffer[cr + 1] == "\n" else 1
    return (cr, 1) if final else None
