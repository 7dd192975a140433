"""Where each screen row of the chat transcript comes from: a message's header, a slice of its text, a note.

Kept apart from the widget so it can be tested and measured without a terminal. A message is a few
blocks of text (header, folded reasoning, body, tool calls, note), each wrapped (chat_wrap) to the
width on what will be drawn. Wrapped rows are kept per message (by its id), with everything it shows (its
text, reasoning, tool calls, note, open folds) at one width, so a change re-wraps that message only and a new
width re-wraps all. Wrapping is lazy: `update` only guesses the height of a message it has no rows for (from
its length), and a message is wrapped when the view comes near it (`wrap_near`), when its rows are read, or
off screen a slice at a time (`wrap_some`): a 20 MB session opens or changes width without wrapping 20 MB.
The reply that is arriving (`LiveReply`) is wrapped again only from its last row on each chunk.
"""

from __future__ import annotations

import json
from bisect import bisect_right
from itertools import accumulate, islice

from tui.context.messages import Message

from tui.app.chat.markdown import MarkdownRenders, wants_markdown
from tui.app.chat.wrap import Block, Wrapped, estimate_rows
from tui.app.chat.header import Standing, head_guess, head_sig, header_block, one_row as _line
from tui.app.shown import MAX_SHOWN, message_text

FOLDS = ("reasoning", "calls")
SLICE = 300_000  # characters wrapped at a time off screen (a non-ASCII one counts 50): 5 to 10 ms


def _cut(text: str, style: str, indent: int = 0) -> list[Block]:
    """A text is shown up to MAX_SHOWN characters (the pane shows all), the cut said in a block of its own:
    while a long reply streams, the shown part stays a prefix of itself and is never wrapped again."""
    if len(text) <= MAX_SHOWN:
        return [Block(text, style, indent=indent)]
    return [Block(text[:MAX_SHOWN], style, indent=indent),
            Block(f"… [{len(text) - MAX_SHOWN:,} more characters not shown here; the pane shows all]", "meta",
                  indent=indent)]


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


class Entry:
    """One message on screen: its header rows, its body rows, then one blank row.

    Wrapped lazily: until its rows are read (`head`, `body`), `height` is a guess and `source` holds what
    wrapping it needs; its layout (`owner`) is told when the real height replaces the guess.
    """

    __slots__ = ("key", "index", "bar", "dropped", "_head", "_body", "guess", "cost", "later", "source", "owner",
                 "figure")

    def __init__(self, key: str, index: int, bar: str, dropped: bool, head: Wrapped | None, body: Wrapped | None,
                 guess: int = 0, source: tuple | None = None, owner: ChatLayout | None = None) -> None:
        self.key = key  # the message's id (or its place when it has none): selection and folds follow it
        self.index = index
        self.bar = bar  # the colour of its left bar: user, assistant, system, tool (also any untrusted message)
        self.dropped = dropped
        self._head, self._body, self.guess, self.source, self.owner = head, body, guess, source, owner
        self.cost = 0  # what wrapping it costs (ChatLayout.pending)
        self.later = False  # a reply shown plain until its Markdown is ready (asked for when near the view)
        self.figure = ""  # its figures in the header (tui/context/message_figures.py)

    @property
    def wrapped(self) -> bool:
        return self._head is not None and self._body is not None

    @property
    def head(self) -> Wrapped:
        if self._head is None:
            self.owner.wrap(self)
        return self._head

    @property
    def body(self) -> Wrapped:
        if self._body is None:
            self.owner.wrap(self)
        return self._body

    @property
    def height(self) -> int:
        if self._head is None or self._body is None:
            return self.guess
        return self._head.height + self._body.height + 1

    @property
    def folds(self) -> list[str]:
        return [block.fold for block in self.body.blocks if block.fold]

    def locate(self, row: int) -> tuple[Block, int, int] | None:
        """The block and [start, end) of local row `row`; None for the blank row after the message."""
        head = self.head
        if row < head.height:
            return head.locate(row)
        row -= head.height
        body = self.body
        return body.locate(row) if row < body.height else None


def _body_guess(message, text: str, note: str, folds: frozenset, width: int) -> int:
    """Rows of a message's body before it is wrapped (chat_wrap.estimate_rows of each part)."""
    rows = estimate_rows(text, width) if text else 0
    reasoning = message.reasoning_content
    if reasoning:
        rows += 1 + (estimate_rows(reasoning, width - 2) if "reasoning" in folds else 0)
    if message.tool_calls:
        rows += 1 + (2 * len(message.tool_calls) if "calls" in folds else 0)
    if note:
        rows += estimate_rows(note, width)
    return rows or 1


def _body_sig(message, text: str, note: str, folds: frozenset, markdown) -> tuple:
    return text, message.reasoning_content, calls_key(message.tool_calls), note, folds, markdown is not None


def bar_of(message) -> str:
    if message.role == "tool" or not message.provenance.trusted:
        return "tool"
    return {"developer": "system"}.get(message.role, message.role)


class ChatLayout:
    """Every message's rows, and the first screen row of each message."""

    def __init__(self) -> None:
        self.width = 0
        self.entries: list[Entry] = []
        self._first_row: list[int] = [0]
        self._dirty: int | None = None  # the first entry whose height changed since first_row was summed
        self._next = 0  # entries before it are all wrapped (wrap_some)
        self.pending = 0  # cost of wrapping what is not wrapped yet: characters (a non-ASCII one 50), a header 300
        self._kept: dict[str, tuple] = {}  # by message key: what its header and body showed, and their rows
        self.rewrapped = 0  # message bodies wrapped since the last update (what a test or benchmark checks)
        self.image_family = ""  # how attached images are counted in their labels
        self.markdown = MarkdownRenders()  # finished replies as Markdown; plain until rendered
        self.figures: dict[str, str] = {}  # by message id: its figures' line, shown in its header

    @property
    def height(self) -> int:
        return self.first_row[-1]

    def update(self, messages: list, dropped: set[int], notes: dict[str, str], open_folds: dict[str, frozenset],
               width: int, live=None) -> None:
        """Lay out `messages` (and the reply arriving, `live`: a LiveReply). Nothing is wrapped here: a message
        keeps its rows if nothing it shows changed; the others get a guessed height until `wrap`."""
        if width != self.width:
            self._kept.clear()
        self.width, self.rewrapped = width, 0
        old, kept, old_markdown, markdown_kept, entries = self._kept, {}, self.markdown.done, {}, []
        self._kept = kept
        no_folds, step, pending = frozenset(), max(1, width - 2), 0
        for index, message in enumerate(messages):
            key = message.id or f"#{index}"
            text = message.content  # a string (most messages); else its parts, images as labels
            text = text if type(text) is str else message_text(message, self.image_family)
            is_dropped = index in dropped
            folds, note = open_folds.get(key, no_folds), notes.get(message.id, "")
            markdown, later = None, wants_markdown(message)
            if later:
                markdown = markdown_kept[(text, width)] = old_markdown.get((text, width))
                later = markdown is None
            entry = Entry(key, index, bar_of(message), is_dropped, None, None, owner=self)
            entry.figure = figure = self.figures.get(message.id, "")
            entry.source, entry.later = (message, text, note, folds, markdown), later
            seen = old.get(key)
            if seen is not None:  # its rows from the last layout, if what they show is the same
                seen_head, head, body_sig, body = seen
                if head is not None and seen_head == head_sig(message, index, is_dropped, figure):
                    entry._head = head
                if body is not None and body_sig == _body_sig(message, text, note, folds, markdown):
                    entry._body = body
                kept[key] = (seen_head, entry._head, body_sig, entry._body)
            if entry._head is None or entry._body is None:
                if entry._body is not None:
                    body_rows = entry._body.height
                elif note or message.reasoning_content or message.tool_calls or "\n" in text:
                    body_rows = _body_guess(message, text, note, folds, width)
                else:  # one line of text (most messages), `estimate_rows` without its calls
                    body_rows = -(-len(text) // step) if len(text) > width else 1
                entry.guess = 1 + body_rows + (entry._head.height if entry._head else
                                               head_guess(message, is_dropped, width, figure))
                entry.cost = 300 + (0 if entry._body else len(text) * (1 if text.isascii() else 50))
                pending += entry.cost
            elif not later:
                entry.source = None
            entries.append(entry)
        self.markdown.done = {key: blocks for key, blocks in markdown_kept.items() if blocks is not None}
        if live is not None:
            entries.append(live.entry(len(messages), width))
        self.entries = entries
        self._first_row = list(accumulate((entry.height for entry in entries), initial=0))
        self._dirty, self._next, self.pending = None, 0, pending

    def wrap(self, entry: Entry, ask: bool = True) -> None:
        """Wrap an entry that has a guessed height; the rows after it move if the guess was off. A reply
        shown plain because its Markdown is not ready (`later`) is asked for it (`ask`: it is near the view)
        and wrapped again if it is ready."""
        message, text, note, folds, markdown = entry.source
        before, width = entry.height, self.width
        if entry._head is None:
            entry._head = Wrapped([header_block(message, entry.index, Standing.DROPPED if entry.dropped else Standing.SENT,
                                                  figure=entry.figure)], width)
        if entry.later and ask:
            markdown = self.markdown.get(text, width)  # a small reply at once, a big one is asked for
        if entry._body is None or markdown is not None and entry.later:
            entry._body = Wrapped(body_blocks(text, message.reasoning_content, message.tool_calls, note, folds,
                                              rendered=markdown), width)
            self.rewrapped += 1
            entry.later = markdown is None and entry.later
        self._kept[entry.key] = (head_sig(message, entry.index, entry.dropped, entry.figure), entry._head,
                                 _body_sig(message, text, note, folds, markdown), entry._body)
        entry.source = entry.source if entry.later else None
        self.pending, entry.cost = self.pending - entry.cost, 0
        if entry.height != before:
            self._dirty = entry.index if self._dirty is None else min(self._dirty, entry.index)

    def wrap_near(self, at: int, above: int, below: int) -> bool:
        """Wrap entry `at`, those before it over `above` rows and those from it on over `below` rows (real
        rows, counted from its first row). True if a guess was off (`moved`)."""
        entries = self.entries
        self.markdown.begin()
        at = max(0, min(at, len(entries) - 1))
        rows, index = 0, at
        while index < len(entries) and (rows < below or index == at):
            if entries[index].later or not entries[index].wrapped:
                self.wrap(entries[index])
            rows, index = rows + entries[index].height, index + 1
        rows, index = 0, at - 1
        while index >= 0 and rows < above:
            if entries[index].later or not entries[index].wrapped:
                self.wrap(entries[index])
            rows, index = rows + entries[index].height, index - 1
        return self.moved

    def wrap_some(self, budget: int = SLICE, ask: bool = False) -> bool:
        """Wrap the entries not wrapped yet, in order, about `budget` characters' worth (`pending`), off screen
        a slice at a time (Markdown asked for only with `ask`: a small session). True if a guess was off."""
        entries, index, spent = self.entries, self._next, 0
        self.markdown.begin()
        while index < len(entries) and spent < budget:
            if not entries[index].wrapped:
                spent += entries[index].cost
                self.wrap(entries[index], ask)
            index += 1
        self._next = index
        if index >= len(entries):
            self.pending = 0  # all wrapped, whatever the count says
        return self.moved

    @property
    def moved(self) -> bool:
        """A height changed since `first_row` was last read."""
        return self._dirty is not None

    @property
    def first_row(self) -> list[int]:
        """The first screen row of each entry, and the total at the end (brought up to date after wraps)."""
        dirty = self._dirty
        if dirty is not None:
            self._dirty = None
            rows = self._first_row
            del rows[dirty + 1:]
            rows.extend(islice(accumulate((entry.height for entry in self.entries[dirty:]), initial=rows[dirty]),
                               1, None))
        return self._first_row

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
        self._appended = False  # the last update only added text at the end of the reply's text

    def set(self, content: str, reasoning: str, calls: list[dict] | None, note: str) -> None:
        self.content, self.reasoning, self.calls, self.note = content, reasoning or "", calls or None, note
        self._appended = False

    def grew(self, content: str, content_from: int, reasoning: str, reasoning_from: int,
             calls: list[dict] | None) -> None:
        """Text arrived: `content[content_from:]` is new. When this view has all before it and nothing else
        changed, the body's text block is only extended (no comparison of what was already there)."""
        calls = calls or None
        self._appended = (0 < content_from == len(self.content) and len(content) <= MAX_SHOWN
                          and reasoning_from == len(self.reasoning) == len(reasoning) and calls == self.calls)
        self.content, self.reasoning, self.calls = content, reasoning, calls

    def blocks(self) -> list[Block]:
        return body_blocks(self.content, self.reasoning, self.calls, self.note, self.folds, live=True)

    def entry(self, index: int, width: int) -> Entry:
        """The entry at `index`; rows are wrapped again only from where the text changed."""
        entry = self._entry
        if entry is None or entry.index != index or width != self._width:
            head = Wrapped([header_block(Message("assistant", ""), index,
                                             Standing.ARRIVING if self.streaming else Standing.SENT)], width)
            entry = self._entry = Entry(self.key, index, "assistant", False, head, Wrapped(self.blocks(), width))
            self._width = width
            self.changed_from = 0
            return entry
        at = self._text_block(entry.body) if self._appended else None
        self._appended = False
        if at is not None:
            self.changed_from = entry.head.height + entry.body.extend(at, _cut(self.content, "body")[0], width)
        else:
            self.changed_from = entry.head.height + entry.body.grow(self.blocks(), width)
        return entry

    @staticmethod
    def _text_block(body: Wrapped) -> int | None:
        """Where the reply's text is among the body's blocks (there is one while it is shown whole)."""
        places = [at for at, block in enumerate(body.blocks) if block.style == "body"]
        return places[0] if len(places) == 1 else None
