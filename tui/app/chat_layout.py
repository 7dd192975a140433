"""Where each screen row of the chat transcript comes from: a message's header, a slice of its text, a note.

Kept apart from the widget so it can be tested and measured without a terminal. A message is a few
blocks of text (header, folded reasoning, body, tool calls, note), each wrapped (chat_wrap) to the
width on what will be drawn. Wrapped rows are kept per message, keyed by everything the message shows
(its text, reasoning, tool calls, note, open folds: in effect its revision) at one width, so a change
re-wraps that message only and a new width re-wraps all. The reply that is arriving (`LiveReply`) is
wrapped again only from its last row on each chunk: its cost does not grow with its length.
"""

from __future__ import annotations

import json
from bisect import bisect_right
from dataclasses import dataclass
from itertools import accumulate

from tui.context.messages import Message

from .chat_markdown import MarkdownRenders, wants_markdown
from .chat_wrap import Block, Wrapped
from .shown import MAX_SHOWN, message_text

FOLDS = ("reasoning", "calls")


def _cut(text: str, style: str, indent: int = 0) -> list[Block]:
    """A text is shown up to MAX_SHOWN characters (the pane shows all), the cut said in a block of its own:
    while a long reply streams, the shown part stays a prefix of itself and is never wrapped again."""
    if len(text) <= MAX_SHOWN:
        return [Block(text, style, indent=indent)]
    return [Block(text[:MAX_SHOWN], style, indent=indent),
            Block(f"… [{len(text) - MAX_SHOWN:,} more characters not shown here; the pane shows all]", "meta",
                  indent=indent)]


def _line(value: object, limit: int) -> str:
    text = value if isinstance(value, str) else str(value)
    return text[:limit].replace("\r\n", "↵").replace("\n", "↵")


def header_block(message, index: int, dropped: bool, live: bool = False) -> Block:
    """Role, #index, where it came from when that matters, and its state: pinned, dropped, incomplete."""
    prov = message.provenance
    pieces: list[tuple[str, str]] = [(_line(message.role, 20), "role"), (f" #{index}", "meta")]
    if prov.source not in ("user", "system_prompt", "model") or not prov.trusted:
        pieces.append((f"  {_line(prov.label or prov.source, 80)}", "label"))
    if not prov.trusted:
        pieces.append(("  untrusted", "warn"))
    if message.pinned:
        pieces.append(("  📌 pinned", "pin"))
    if dropped:
        pieces.append(("  ✂ dropped from the request", "dropped"))
    if message.incomplete:
        pieces.append(("  ⚠ incomplete", "warn"))
    if live:
        pieces.append(("  ● arriving…", "meta"))
    text, spans = "", []
    for piece, style in pieces:
        spans.append((len(text), len(text) + len(piece), style))
        text += piece
    return Block(text, "head", tuple(spans))


def calls_key(calls: list[dict] | None) -> str:
    if not calls:
        return ""
    try:
        return json.dumps(calls, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return repr(calls)


def _call_parts(call: object) -> tuple[str, str]:
    function = call.get("function", {}) if isinstance(call, dict) else {}
    function = function if isinstance(function, dict) else {}
    arguments = function.get("arguments", "")
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False, default=str)
    return str(function.get("name", "?")), arguments


def body_blocks(text: str, reasoning: str | None, calls: list[dict] | None, note: str,
                open_folds: frozenset[str], live: bool = False, rendered: list[Block] | None = None) -> list[Block]:
    """Folded reasoning, the text (`rendered`: as Markdown), folded tool calls, and the note under a reply."""
    blocks: list[Block] = []
    if reasoning:
        if "reasoning" in open_folds:
            blocks.append(Block("▾ reasoning", "fold", fold="reasoning"))
            blocks.extend(_cut(reasoning, "reasoning", 2))
        else:
            lines = reasoning.count("\n") + 1
            blocks.append(Block(f"▸ reasoning · {lines} line{'s' if lines > 1 else ''} (Enter shows it)", "fold",
                                fold="reasoning"))
    if rendered:
        blocks.extend(rendered)
    elif text:
        blocks.extend(_cut(text, "body"))
    elif live:
        blocks.append(Block("…", "meta"))
    if calls:
        parts = [_call_parts(call) for call in calls]
        if "calls" in open_folds:
            blocks.append(Block(f"▾ tool calls ({len(calls)})", "fold", fold="calls"))
            blocks.extend(_cut("\n".join(f"{name}({arguments})" for name, arguments in parts), "calls", 2))
        else:
            names = ", ".join(_line(name, 60) for name, _ in parts[:5]) + (", …" if len(parts) > 5 else "")
            blocks.append(Block(f"▸ tool calls ({len(calls)}): {names}", "fold", fold="calls"))
    for line in note.split("\n")[:20] if note else ():  # several notes under one reply: one a line
        blocks.append(Block(_line(line, 2000), "note"))
    return blocks


@dataclass(slots=True)
class Entry:
    """One message on screen: its header rows, its body rows, then one blank row."""

    key: str  # the message's id (or its place when it has none): selection and folds follow it
    index: int
    bar: str  # the colour of its left bar: user, assistant, system, tool (also any untrusted message)
    dropped: bool
    head: Wrapped
    body: Wrapped

    @property
    def height(self) -> int:
        return self.head.height + self.body.height + 1

    @property
    def folds(self) -> list[str]:
        return [block.fold for block in self.body.blocks if block.fold]

    def locate(self, row: int) -> tuple[Block, int, int] | None:
        """The block and [start, end) of local row `row`; None for the blank row after the message."""
        if row < self.head.height:
            return self.head.locate(row)
        row -= self.head.height
        return self.body.locate(row) if row < self.body.height else None


def bar_of(message) -> str:
    if message.role == "tool" or not message.provenance.trusted:
        return "tool"
    return {"developer": "system"}.get(message.role, message.role)


def message_key(message, index: int) -> str:
    return message.id or f"#{index}"


class ChatLayout:
    """Every message's rows, and the first screen row of each message."""

    def __init__(self) -> None:
        self.width = 0
        self.entries: list[Entry] = []
        self.first_row: list[int] = [0]
        self._heads: dict[tuple, Wrapped] = {}
        self._bodies: dict[tuple, Wrapped] = {}
        self.rewrapped = 0  # messages wrapped by the last update (what a test or benchmark checks)
        self.image_family = ""  # how attached images are counted in their labels
        self.markdown = MarkdownRenders()  # finished replies as Markdown; plain until rendered

    @property
    def height(self) -> int:
        return self.first_row[-1]

    def update(self, messages: list, dropped: set[int], notes: dict[str, str], open_folds: dict[str, frozenset],
               width: int, live=None) -> None:
        """Lay out `messages` (and the reply arriving, `live`: a LiveReply); unchanged messages are not wrapped."""
        if width != self.width:
            self._heads.clear()
            self._bodies.clear()
        self.width, self.rewrapped = width, 0
        heads, bodies, entries = {}, {}, []
        no_folds = frozenset()
        rendered = self._render_markdown(messages, width)
        for index, message in enumerate(messages):
            key = message_key(message, index)
            prov, is_dropped = message.provenance, index in dropped
            head_key = (message.role, index, prov.source, prov.label, prov.trusted, message.pinned, is_dropped,
                        message.incomplete)
            head = heads.get(head_key) or self._heads.get(head_key) or \
                Wrapped([header_block(message, index, is_dropped)], width)
            heads[head_key] = head
            text, folds, note = message_text(message, self.image_family), open_folds.get(key, no_folds), \
                notes.get(message.id, "")
            markdown = rendered.get(index)
            body_key = (text, message.reasoning_content, calls_key(message.tool_calls), note, folds,
                        markdown is not None)
            body = bodies.get(body_key) or self._bodies.get(body_key)
            if body is None:
                body = Wrapped(body_blocks(text, message.reasoning_content, message.tool_calls, note, folds,
                                           rendered=markdown), width)
                self.rewrapped += 1
            bodies[body_key] = body
            entries.append(Entry(key, index, bar_of(message), is_dropped, head, body))
        self._heads, self._bodies = heads, bodies
        if live is not None:
            entries.append(live.entry(len(messages), width))
        self.entries = entries
        self.first_row = list(accumulate((entry.height for entry in entries), initial=0))

    def _render_markdown(self, messages: list, width: int) -> dict[int, list[Block]]:
        """Markdown of the finished replies that have it ready, newest first (they are likely in view)."""
        self.markdown.begin()
        rendered = {}
        for index in range(len(messages) - 1, -1, -1):
            if wants_markdown(messages[index]):
                blocks = self.markdown.get(messages[index].text(), width)
                if blocks is not None:
                    rendered[index] = blocks
        self.markdown.end()
        return rendered

    def live_changed(self) -> None:
        """The last entry (the reply arriving) changed height: only its end moves."""
        if self.entries:
            self.first_row[-1] = self.first_row[-2] + self.entries[-1].height

    def message_at(self, row: int) -> int | None:
        """Index into `entries` of the message shown on screen row `row`."""
        if row < 0 or row >= self.height:
            return None
        return bisect_right(self.first_row, row) - 1

    def locate(self, row: int) -> tuple[Entry, int] | None:
        at = self.message_at(row)
        return None if at is None else (self.entries[at], row - self.first_row[at])

    def span(self, at: int) -> tuple[int, int]:
        """First row and row count (without the blank row) of entry `at`."""
        return self.first_row[at], self.entries[at].height - 1


class LiveReply:
    """The reply that is arriving: wrapped as it grows, the rows already final are kept."""

    def __init__(self, streaming: bool = True, key: str = "live") -> None:
        self.content, self.reasoning, self.calls, self.note = "", "", None, ""
        self.streaming, self.key = streaming, key  # streaming: from a server now (not a replay of a stored one)
        self.folds: frozenset[str] = frozenset()
        self._entry: Entry | None = None
        self._width = 0
        self.changed_from = 0  # first local row of the entry that changed in the last update

    def set(self, content: str, reasoning: str, calls: list[dict] | None, note: str) -> None:
        self.content, self.reasoning, self.calls, self.note = content, reasoning or "", calls or None, note

    def blocks(self) -> list[Block]:
        return body_blocks(self.content, self.reasoning, self.calls, self.note, self.folds, live=True)

    def entry(self, index: int, width: int) -> Entry:
        """The entry at `index`; rows are wrapped again only from where the text changed."""
        entry = self._entry
        if entry is None or entry.index != index or width != self._width:
            head = Wrapped([header_block(Message("assistant", ""), index, False, live=self.streaming)], width)
            entry = self._entry = Entry(self.key, index, "assistant", False, head, Wrapped(self.blocks(), width))
            self._width = width
            self.changed_from = 0
            return entry
        self.changed_from = entry.head.height + entry.body.grow(self.blocks(), width)
        return entry
