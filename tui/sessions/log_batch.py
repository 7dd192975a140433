"""The lines of one append to a session file, and the parts and messages they add: each written once, and taken
by the writer (tui/sessions/log_writer.py) only once the lines are on disk."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from tui.context.messages import Message
from tui.sessions.body_split import Split
from tui.sessions.body_text import canonical
from tui.sessions.log_state import Json
from tui.sessions.session_log import KEEP_CONTENTS, _dumps, part_hash

if TYPE_CHECKING:
    from tui.sessions.log_writer import LogWriter


class Batch:
    """The lines of one append, and what they add, taken by the writer only once they are on disk."""

    def __init__(self, writer: LogWriter) -> None:
        self.writer = writer
        self.lines: list[str] = []
        self.later: list[Callable[[], None]] = []  # the requests' lines, made once the session's are
        self.known: set[str] = set()
        self.canonical: dict[str, str] = {}
        self.contents: dict[str, str] = {}
        self.figures: dict[int, dict[str, Json]] = {}
        self.bodies: dict[int, Split] = {}
        self.items: dict[int, dict[str, list[str]]] = {}
        self.new_records = 0
        self.encoding: dict[str, Json] | None = None
        self.initial: dict[str, Json] | None = None
        self.last_body: dict[str, Json] | None = None
        self.state: tuple[dict[str, Json], list[str], list[dict[str, Json]]] | None = None
        self.shown_messages: list[Message] | None = None

    def add(self, line: str) -> None:
        self.lines.append(line)

    def part(self, text: str, wire: bool = False) -> str:
        ident = part_hash(text)
        if ident in self.writer.known or ident in self.known:
            return ident
        if "\n" in text or "\r" in text or not encodable(text):
            self.add(_dumps({"t": "x", "h": ident, "s": text}))
        else:
            self.add('{"t":"x","h":"' + ident + '","v":' + text + "}")
        self.known.add(ident)
        if wire:
            key, own = canonical(text)
            self.canonical.setdefault(part_hash(key), ident)
            if not own:
                self.writer.own_wire = False  # a client's own bytes: its replies' wire form is not guessed
        return ident

    def commit(self) -> None:
        writer = self.writer
        writer.known |= self.known
        for key, value in self.canonical.items():
            writer.canonical.setdefault(key, value)
        if self.contents:
            writer.contents.update(self.contents)
            while len(writer.contents) > KEEP_CONTENTS:
                del writer.contents[next(iter(writer.contents))]
        writer.figures.update(self.figures)
        if self.bodies:
            last = max(self.bodies)
            writer.bodies = {last: self.bodies[last]}
            writer.items = {last: self.items[last]}
        writer.count += self.new_records
        if self.initial is not None:
            writer.initial = self.initial
        if self.encoding is not None:
            writer.encoding = self.encoding
        if self.last_body is not None:
            writer.last_body = self.last_body
        if self.state is not None:
            writer.settings, writer.shown, writer.branches = self.state
        if self.shown_messages is not None:
            writer._shown_messages = self.shown_messages


def encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
