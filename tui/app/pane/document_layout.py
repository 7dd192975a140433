"""Where each screen row of the document comes from: a slice of the text, or a note put between lines.

Kept separate from the widget so it can be tested and measured without a terminal. Updates are
incremental: only lines from the first changed character onwards are laid out again, which keeps
typing at the end of a 2 MB document cheap.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from itertools import accumulate, islice

from rich.cells import get_character_cell_size


from tui.app.shown import drawn, drawn_width


@dataclass(frozen=True)
class Note:
    """A line that is not part of the document: a dropped message, the cache boundary, the draft mark."""

    text: str
    style: str  # a key into the role/kind styles: dropped, cache, draft


@dataclass(frozen=True)
class Line:
    start: int
    end: int
    note: Note | None = None


def wrap_points(text: str, width: int) -> list[int]:
    """Offsets where each screen row of `text` starts, wrapping at `width` cells (wide characters kept whole)."""
    plain = text.isascii() and text.isprintable()  # no control or tab: one cell a character
    if width <= 0 or len(text) <= width and plain:
        return [0]
    if plain:
        return list(range(0, len(text), width)) or [0]
    # Wrap on what is drawn: a hidden character is drawn as a wider stand-in (`<U+E0041>`), a tab as one cell.
    cell_size = get_character_cell_size if drawn(text) == text.replace("\t", "⇥") else drawn_width
    points, used = [0], 0
    for index, char in enumerate(text):
        size = 1 if char == "\t" else cell_size(char)
        if used + size > width and used:
            points.append(index)
            used = 0
        used += size
    return points


def note_wrap_points(text: str, width: int) -> list[int]:
    """Row starts for one of ctxpane's own notes: at word boundaries ("of its tokens", never "of it / s tokens"),
    a word longer than the row cut where it must. The document itself wraps at `width` exactly (wrap_points)."""
    found, start = [0], 0
    while True:
        rest = wrap_points(text[start:], width)
        if len(rest) == 1:
            return found
        cut = start + rest[1]
        space = text.rfind(" ", start + 1, cut)  # the row ends after its last space, the next word starts a row
        start = space + 1 if space > start else cut
        found.append(start)


class DocLayout:
    def __init__(self) -> None:
        self.text = ""
        self.notes: list[tuple[int, Note]] = []
        self.width = 80
        self.fold_drops = True  # a drop note takes one row; `z` in the document shows them whole
        self.lines: list[Line] = []
        self.rows: list[int] = []  # screen rows of each line
        self.first_row: list[int] = [0]  # row where each line starts (and the total at the end)
        # Wrap points of lines recently drawn: a long line's rows are drawn one after another, and wrapping a
        # 1 MB line once per row drawn made each frame of it cost ~0.1 s (the rows of lines are all counted).
        self._points: dict[tuple, list[int]] = {}

    @property
    def height(self) -> int:
        return self.first_row[-1]

    def update(self, text: str, notes: list[tuple[int, Note]], width: int) -> int:
        """Lay out a new text; returns the index of the first line that changed."""
        notes = sorted(notes, key=lambda item: item[0])
        if width != self.width or not self.lines:
            keep_from = 0
            self.first_row = [0]
        else:
            keep_from = self._unchanged_until(text, notes)
        start = self.lines[keep_from].start if keep_from < len(self.lines) else 0
        self.text, self.notes, self.width = text, notes, width
        self._points.clear()
        del self.lines[keep_from:]
        del self.rows[keep_from:]
        self.lines.extend(self._build(start, [n for n in notes if n[0] >= start]))
        self.rows.extend(self._rows(line) for line in self.lines[keep_from:])
        del self.first_row[keep_from + 1:]  # rows before the change stay where they are
        self.first_row.extend(islice(accumulate(self.rows[keep_from:], initial=self.first_row[keep_from]), 1, None))
        return keep_from

    def _unchanged_until(self, text: str, notes: list[tuple[int, Note]]) -> int:
        """Index of the first line that may differ: before the first changed character or note."""
        from tui.context.cache.prefix import common_prefix_length  # the engine loads after the first frame
        same = common_prefix_length(self.text, text)
        for old, new in zip(self.notes, notes):
            if old != new:
                same = min(same, old[0], new[0])
                break
        else:
            if len(self.notes) != len(notes):
                extra = (self.notes if len(self.notes) > len(notes) else notes)[min(len(self.notes), len(notes))]
                same = min(same, extra[0])
        index = bisect_right(self.lines, same, key=lambda line: line.start) - 1  # the line holding the change
        while index > 0 and (self.lines[index].note is not None or self.lines[index].start >= same):
            index -= 1
        # Step back past notes sitting at this line's start, so they are placed again.
        while index > 0 and self.lines[index - 1].note is not None:
            index -= 1
        return max(0, index)

    def _build(self, position: int, notes: list[tuple[int, Note]]) -> list[Line]:
        lines: list[Line] = []
        text, length, pending = self.text, len(self.text), 0
        while True:
            while pending < len(notes) and notes[pending][0] <= position:
                lines.append(Line(position, position, notes[pending][1]))
                pending += 1
            newline = text.find("\n", position)
            end = length if newline < 0 else newline
            forced = notes[pending][0] if pending < len(notes) and notes[pending][0] < end else None
            if forced is not None:  # a note mid-line splits the line there
                lines.append(Line(position, forced))
                position = forced
                continue
            lines.append(Line(position, end))
            if newline < 0:
                break
            position = newline + 1
        for offset, note in notes[pending:]:
            lines.append(Line(offset, offset, note))
        return lines

    def _rows(self, line: Line) -> int:
        return len(self._points_of(line))

    def _points_of(self, line: Line) -> list[int]:
        if line.note is not None and line.note.style == "dropped" and self.fold_drops:
            return [0]  # one row each (cut with an ellipsis where drawn): eight notes never push the document away
        wrap = note_wrap_points if line.note is not None else wrap_points
        return wrap(self._line_text(line), self.width)

    def _line_text(self, line: Line) -> str:
        return line.note.text if line.note is not None else self.text[line.start:line.end]

    def _wrapped(self, line: Line) -> tuple[list[int], int]:
        """The line's wrap points and its length, kept for the lines drawn lately."""
        key = (line.start, line.end, line.note)
        points = self._points.get(key)
        if points is None:
            if len(self._points) >= 256:
                self._points.clear()
            points = self._points[key] = self._points_of(line)
        return points, (len(line.note.text) if line.note is not None else line.end - line.start)

    def locate(self, row: int) -> tuple[Line, int, int] | None:
        """The line shown on screen row `row`, and the [start, end) offsets of that row.

        Offsets are into the document text, or into the note's own text for a note.
        """
        if row < 0 or row >= self.height:
            return None
        index = bisect_right(self.first_row, row) - 1
        line = self.lines[index]
        within = row - self.first_row[index]
        points, length = self._wrapped(line)
        start = points[within]
        end = points[within + 1] if within + 1 < len(points) else length
        base = 0 if line.note is not None else line.start
        return line, base + start, base + end

    def row_of(self, offset: int) -> int:
        """The screen row where text offset `offset` is shown."""
        starts = [line.start for line in self.lines]
        index = max(0, bisect_right(starts, offset) - 1)
        while index > 0 and self.lines[index].note is not None:
            index -= 1
        return self.first_row[index]
