"""Wrapping for the chat transcript: rows as (start, end) offsets into a block's text, never copies.

A row ends at the last space that fits, else where the width is full; widths are those of what will be
drawn (stand-ins for hidden characters, a tab as one cell). Where a row ends depends only on the text
from the row's start on, so a text that only grew is wrapped again from its last row (`Wrapped.grow`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from itertools import count

from rich.cells import get_character_cell_size

from tui.context.untrusted.visible import hidden_any

from tui.app.shown import drawn_width

_serials = count(1)


@dataclass(frozen=True)
class Block:
    """A run of text drawn with one style, wrapped as a unit. `spans` restyle parts of it (start, end, style);
    `fold` names the folded part this block summarises (selecting it toggles that part)."""

    text: str
    style: str = "body"
    spans: tuple[tuple[int, int, str], ...] = ()
    indent: int = 0
    fold: str = ""


@lru_cache(maxsize=1)
def _hidden() -> re.Pattern:
    return re.compile(hidden_any(True))  # presentation selectors too: judged one character at a time


def _cell_size(char: str, hidden: set[str]) -> int:
    if char == "\t":
        return 1
    return drawn_width(char) if char in hidden else get_character_cell_size(char)


def _next_cut(line: str, pos: int, width: int, hidden: set[str] | None) -> int:
    """Where the row starting at `pos` ends: at the last space that fits, else where the width is full.

    Depends only on the text from `pos` on, so a growing text can be wrapped again from its last row.
    """
    if hidden is None:  # printable ASCII: one cell a character
        end = pos + width
    else:
        end, used = pos, 0
        while end < len(line) and used + _cell_size(line[end], hidden) <= width:
            used += _cell_size(line[end], hidden)
            end += 1
        end = max(end, pos + 1)  # a character wider than the row still takes a row
    if end >= len(line):
        return len(line)
    if line[end] == " ":  # the space that overflows stays at the row's end (cropped when drawn)
        return end + 1
    space = line.rfind(" ", pos, end)
    return space + 1 if space > pos else end


def wrap_line(line: str, width: int, base: int = 0) -> list[tuple[int, int]]:
    """Rows (start, end) of one line with no newline, offsets shifted by `base`."""
    hidden = None if line.isascii() and line.isprintable() else set(_hidden().findall(line))
    if hidden is None and len(line) <= width:
        return [(base, base + len(line))]
    rows, pos, width = [], 0, max(1, width)
    while True:
        cut = _next_cut(line, pos, width, hidden)
        rows.append((base + pos, base + cut))
        if cut >= len(line):
            return rows
        pos = cut


def wrap_text(text: str, width: int, base: int = 0) -> list[tuple[int, int]]:
    """Rows (start, end) of a text: each line wrapped at `width` cells; the newline belongs to no row."""
    rows: list[tuple[int, int]] = []
    start = 0
    while True:
        newline = text.find("\n", start)
        end = len(text) if newline < 0 else newline
        rows.extend(wrap_line(text[start:end], width, base + start))
        if newline < 0:
            return rows
        start = newline + 1


def estimate_rows(text: str, width: int) -> int:
    """About the rows `wrap_text` makes of `text` (exact for one line that fits), without wrapping it: what a
    message off screen is taken to take until it is wrapped."""
    lines = text.count("\n") + 1 if "\n" in text else 1
    if lines == 1 and len(text) <= width:
        return 1
    return max(lines, -(-len(text) // max(1, width - 2)))  # a row ends about half a word short


class Wrapped:
    """Blocks and their rows at one width. `serial` names this layout in the strip cache."""

    __slots__ = ("blocks", "rows", "height", "serial")

    def __init__(self, blocks: list[Block], width: int) -> None:
        self.blocks = blocks
        self.rows = [wrap_text(block.text, width - block.indent) for block in blocks]
        self.height = sum(map(len, self.rows))
        self.serial = next(_serials)

    def locate(self, row: int) -> tuple[Block, int, int]:
        for block, rows in zip(self.blocks, self.rows):
            if row < len(rows):
                start, end = rows[row]
                return block, start, end
            row -= len(rows)
        raise IndexError(row)

    def extend(self, index: int, block: Block, width: int) -> int:
        """Block `index` is the same but for text added at its end (the caller knows it: a streamed delta):
        only its last row on is wrapped again. Returns the first row that may have changed."""
        first = sum(map(len, self.rows[:index])) + self._rewrap_tail(index, block, width)
        self.blocks[index] = block
        self.height = sum(map(len, self.rows))
        return first

    def _rewrap_tail(self, index: int, block: Block, width: int) -> int:
        """Wrap block `index` again from its last row, as `block`; returns how many of its rows were kept."""
        rows = self.rows[index]
        start = rows.pop()[0]
        kept = len(rows)
        rows.extend(wrap_text(block.text[start:], width - block.indent, start))
        return kept

    def grow(self, blocks: list[Block], width: int) -> int:
        """Take new blocks; a block whose text only grew is wrapped again from its last row, an unchanged
        block not at all. Returns the first row that may have changed."""
        first, offset = None, 0
        for index, block in enumerate(blocks):
            old = self.blocks[index] if index < len(self.blocks) else None
            same_shape = old is not None and (old.style, old.fold, old.indent, old.spans) == \
                (block.style, block.fold, block.indent, block.spans)
            if same_shape and old.text == block.text:
                offset += len(self.rows[index])
                continue
            if same_shape and block.text.startswith(old.text):
                kept = self._rewrap_tail(index, block, width)
                first = offset + kept if first is None else first
                rows = self.rows[index]
            else:
                first = offset if first is None else first
                rows = wrap_text(block.text, width - block.indent)
                if old is None:
                    self.rows.append(rows)
                else:
                    self.rows[index] = rows
            if old is None:
                self.blocks.append(block)
            else:
                self.blocks[index] = block
            offset += len(rows)
        if len(self.blocks) > len(blocks):
            first = offset if first is None else first
            del self.rows[len(blocks):], self.blocks[len(blocks):]
        self.height = sum(map(len, self.rows))
        return self.height if first is None else first  # the serial stays: the caller drops the changed rows
