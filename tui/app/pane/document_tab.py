"""The exact rendered document, drawn line by line (Textual's Line API): only visible rows cost."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import TYPE_CHECKING

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding
from textual.cache import LRUCache
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip


from tui.app.pane.document_layout import DocLayout, Note
from tui.app.shown import drawn

if TYPE_CHECKING:
    from tui.context.request import RequestView


def note_lines(view: RequestView, session_messages: list, draft_index: int | None,
               previous_exists: bool) -> list[tuple[int, Note]]:
    """Notes between document lines: dropped messages where they were, the cache boundary, the draft."""
    from tui.context.drop_notes import drop_notes  # the engine loads after the first frame (issue 23)
    document = view.document
    first_offset: dict[int, int] = {}
    for span in document.spans:
        if span.message is not None:
            first_offset.setdefault(view.origin[span.message], span.start)
    notes: list[tuple[int, Note]] = [(note.offset, Note(note.text, "dropped"))
                                     for note in drop_notes(view, session_messages)]
    prefix = view.prefix
    if previous_exists:
        cached, new = prefix.tokens, prefix.total_tokens - prefix.tokens
        notes.append((min(prefix.chars, len(document.text)),
                      Note(f"── cached above: {cached} tokens (predicted reuse {prefix.predicted_cached}) │ new below: "
                           f"{new} tokens — {prefix.cause} ──", "cache")))
    for offset, text in view.marks:  # a body's own marks (Anthropic's cache_control breakpoints), where they are
        notes.append((min(offset, len(document.text)), Note(text, "cache")))
    if draft_index is not None and draft_index in first_offset:
        notes.append((first_offset[draft_index], Note("▼ draft (not sent yet)", "draft")))
    return notes


class DocumentView(ScrollView, can_focus=True):
    DEFAULT_CSS = """
    DocumentView { background: $surface; overflow-y: scroll; overflow-x: hidden; }
    """
    BINDINGS = [Binding("z", "toggle_drop_notes", "Drop notes: whole / one line")]

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.layout_model = DocLayout()
        self.view: RequestView | None = None
        self.roles: dict[str, str] = {}
        self._styles: dict[tuple, Style] = {}
        self._overlays: list[tuple[int, int, str]] = []
        self._draft_message: int | None = None
        self._cache: LRUCache[int, Strip] = LRUCache(256)
        self._pending: tuple | None = None
        self._starts: list[int] = []

    def set_roles(self, roles: dict[str, str]) -> None:
        self.roles = roles
        self._styles.clear()
        self._cache.clear()
        self.refresh()

    def show(self, view: RequestView, notes: list[tuple[int, Note]], draft_message: int | None) -> None:
        """Show a new view; lays out only what changed since the last one."""
        if self.size.width <= 0:
            self._pending = (view, notes, draft_message)
            return
        follow = self.scroll_y >= self.max_scroll_y - 1
        self.view, self._draft_message = view, draft_message
        self._overlays = self._overlay_ranges(view)
        self._starts = [span.start for span in view.document.spans]
        self.layout_model.update(view.document.text, notes, max(10, self.scrollable_content_region.width - 1))
        self._cache.clear()
        self.virtual_size = Size(self.layout_model.width, self.layout_model.height)
        if follow:
            self.scroll_end(animate=False, immediate=True)
        self.refresh()

    def action_toggle_drop_notes(self) -> None:
        """Each drop note on one row (the default), or whole, wrapped at its words."""
        layout = self.layout_model
        layout.fold_drops = not layout.fold_drops
        layout.lines.clear()  # every note's rows change: laid out again whole
        layout.rows.clear()
        if self.view is not None:
            self.show(self.view, layout.notes, self._draft_message)

    def on_resize(self) -> None:
        if self._pending is not None:
            pending, self._pending = self._pending, None
            self.show(*pending)
        elif self.view is not None:
            self.show(self.view, self.layout_model.notes, self._draft_message)

    def _overlay_ranges(self, view: RequestView) -> list[tuple[int, int, str]]:
        from tui.context.untrusted.forged_blocks import TURN_OPENERS
        ranges = [(f.start, f.end, "flag") for f in view.snapshot.flags]
        for forged in view.forged:
            match = TURN_OPENERS.match(view.document.text, forged.block.start)
            ranges.append((forged.block.start, match.end() if match else forged.block.start + 1, "forged"))
        return sorted(ranges)

    def _style(self, role: str, kind: str, draft: bool, overlay: str | None) -> Style:
        key = (role, kind, draft, overlay)
        style = self._styles.get(key)
        if style is None:
            color = self.roles.get(role if role != "none" else "marker", "white")
            if kind == "marker":
                style = Style(color=self.roles.get("marker", "grey50"), dim=True)
            elif kind == "fence":
                style = Style(color="black", bgcolor=self.roles.get("fence", "dark_orange"))
            else:
                style = Style(color=color, italic=kind == "reasoning", underline=kind == "tool_call")
            if draft:
                style += Style(color=self.roles.get("draft", color), italic=True)
            if overlay == "flag":
                style += Style(color="white", bgcolor=self.roles.get("forged", "red"), bold=True)
            elif overlay == "forged":
                style += Style(color=self.roles.get("forged", "red"), bold=True, reverse=True, underline=True)
            self._styles[key] = style
        return style

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        row = scroll_y + y
        width = self.size.width
        strip = self._cache.get(row)
        if strip is None:
            strip = self._render_row(row)
            self._cache[row] = strip
        return strip.crop_extend(scroll_x, scroll_x + width, self.rich_style)

    def _render_row(self, row: int) -> Strip:
        located = self.layout_model.locate(row) if self.view is not None else None
        if located is None:
            return Strip.blank(self.size.width, self.rich_style)
        line, start, end = located
        if line.note is not None:
            color = self.roles.get(line.note.style, "grey50")
            style = Style(color=color, strike=line.note.style == "dropped", bold=line.note.style == "cache")
            text = drawn(line.note.text[start:end])
            if line.note.style == "dropped" and self.layout_model.fold_drops and len(text) > self.size.width - 1:
                text = text[:max(1, self.size.width - 2)] + "…"  # folded: `z` shows the whole note
            return Strip([Segment(text, style)])
        return Strip(list(self._segments(start, end)))

    def _segments(self, start: int, end: int):
        document = self.view.document
        spans, starts = document.spans, self._starts
        index = max(0, bisect_right(starts, start) - 1)
        upto = bisect_left(starts, end)
        cuts = sorted({start, end, *[s.start for s in spans[index:upto] if start < s.start < end],
                       *[p for a, b, _ in self._overlays for p in (a, b) if start < p < end]})
        for left, right in zip(cuts, cuts[1:]):
            while index + 1 < len(spans) and spans[index + 1].start <= left:
                index += 1
            span = spans[index]
            overlay = next((kind for a, b, kind in self._overlays if a <= left < b), None)
            draft = span.message is not None and self.view.origin[span.message] == self._draft_message
            role = document.role_of(span)
            yield Segment(drawn(document.text[left:right]), self._style(role, span.kind, draft, overlay))
