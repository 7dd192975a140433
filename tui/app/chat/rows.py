"""Drawing one row of the chat transcript as a Strip: the left bar, the text as text, the cursor tint.

Every piece of a message's text reaches the screen through `shown.drawn` (visible stand-ins for control,
BiDi and other hidden characters, a tab as one cell): never parsed as markup, never sent raw.
Strips are cached by what they show, so scrolling back over drawn rows costs a dictionary look-up.
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from textual.cache import LRUCache
from textual.strip import Strip
from textual.widget import Widget

from tui.app.chat.wrap import Block
from tui.app.chat.layout import Entry
from tui.app.shown import drawn

GUTTER = 2  # the bar and a space

COMPONENT_CLASSES = {"chat--cursor", "chat--cursor-bar", "chat--bar-user", "chat--bar-assistant",
                     "chat--bar-system", "chat--bar-tool", "chat--role-user", "chat--role-assistant",
                     "chat--role-system", "chat--role-tool", "chat--meta", "chat--label", "chat--warn",
                     "chat--pin", "chat--dropped", "chat--fold", "chat--reasoning", "chat--calls", "chat--note", "chat--match"}

CSS = """
ChatView > .chat--cursor { background: $accent 22%; }
ChatView > .chat--cursor-bar { color: $accent; text-style: bold; }
ChatView > .chat--bar-user { color: $success; }
ChatView > .chat--bar-assistant { color: $primary; }
ChatView > .chat--bar-system { color: $secondary; }
ChatView > .chat--bar-tool { color: $warning; }
ChatView > .chat--role-user { text-style: bold; }
ChatView > .chat--role-assistant { text-style: bold; }
ChatView > .chat--role-system { text-style: bold; }
ChatView > .chat--role-tool { text-style: bold; }
ChatView > .chat--meta { color: $text-muted; }
ChatView > .chat--label { text-style: italic; }
ChatView > .chat--warn { color: $warning; text-style: bold; }
ChatView > .chat--pin { text-style: bold; }
ChatView > .chat--dropped { color: $text-muted; text-style: strike; }
ChatView > .chat--fold { color: $text-muted; text-style: italic; }
ChatView > .chat--reasoning { color: $text-muted; text-style: italic; }
ChatView > .chat--calls { color: $text-muted; }
ChatView > .chat--note { color: $warning; text-style: bold; }
ChatView > .chat--match { color: $text; background: $warning 60%; text-style: bold; }
"""


class RowPainter:
    """Strips for a ChatView's rows, with the view's component styles resolved once per theme."""

    def __init__(self, widget: Widget) -> None:
        self.widget = widget
        self._styles: dict[str, Style] = {}
        self._plain: Style | None = None
        self._strips: LRUCache[tuple, Strip] = LRUCache(2048)

    def clear(self, styles: bool = False) -> None:
        self._strips.clear()
        if styles:
            self._styles.clear()
            self._plain = None

    @property
    def plain(self) -> Style:
        """The view's own style (its colours over its background): looked up once, not on every row."""
        if self._plain is None:
            self._plain = self.widget.rich_style
        return self._plain

    def forget(self, entry: Entry, start: int, end: int) -> None:
        """Drop the cached strips of local rows [start, end) of `entry` (a reply that grew)."""
        for row in range(start, end):
            for cursor in (False, True):
                self._strips.discard(self._key(entry, row, cursor))

    @staticmethod
    def _key(entry: Entry, row: int, cursor: bool) -> tuple:
        # Wrapped rows may be shared by two messages with the same text; a drawn row carries its bar and dimming.
        return entry.head.serial, entry.body.serial, entry.bar, entry.dropped, row, cursor

    def style(self, name: str) -> Style:
        """A component style, its colour blended over the view's background (as a widget's would be),
        without a background of its own unless it is the cursor's tint."""
        style = self._styles.get(name)
        if style is None:
            full = self.widget.get_component_rich_style(f"chat--{name}", default=Style())
            if name in ("cursor", "match"):
                style = Style(bgcolor=full.bgcolor, bold=name == "match")
            else:
                partial = self.widget.get_component_rich_style(f"chat--{name}", partial=True, default=Style())
                style = partial.without_color + (Style(color=full.color) if partial.color else Style())
            self._styles[name] = style
        return style

    def row(self, entry: Entry, local: int, cursor: bool, width: int) -> Strip:
        key = self._key(entry, local, cursor)
        strip = self._strips.get(key)
        if strip is None:
            strip = self._strips[key] = self._draw(entry, local, cursor, width)
        return strip

    def _draw(self, entry: Entry, local: int, cursor: bool, width: int) -> Strip:
        plain = self.plain
        base = plain + self.style("cursor") if cursor else plain
        located = entry.locate(local)
        if located is None:
            return Strip.blank(width, plain)
        block, start, end = located
        bar = Segment("█", base + self.style("cursor-bar")) if cursor else \
            Segment("▌", base + self.style(f"bar-{entry.bar}"))
        segments = [bar, Segment(" " * (GUTTER - 1 + block.indent), base)]
        segments += self._text(block, start, end, base, entry)
        query = getattr(self.widget, "search_query", "")
        if query:
            segments = highlight(segments, query, self.style("match"))
        return Strip(segments).crop(0, width - 1).extend_cell_length(width, base)

    def _text(self, block: Block, start: int, end: int, base: Style, entry: Entry) -> list[Segment]:
        dim = Style(dim=True) if entry.dropped else None
        cuts = sorted({start, end, *[p for a, b, _ in block.spans for p in (a, b) if start < p < end]})
        segments = []
        for left, right in zip(cuts, cuts[1:]):
            name = next((s for a, b, s in block.spans if a <= left < b), block.style)
            if name == "role":
                name = f"role-{entry.bar}"
            if isinstance(name, Style):  # a rendered Markdown span: its own colours (no links, no meta)
                style = base + name
            else:
                style = base + self.style(name) if name not in ("body", "markdown") else base
            segments.append(Segment(drawn(block.text[left:right]), style + dim if dim else style))
        return segments


def highlight(segments: list[Segment], query: str, style: Style) -> list[Segment]:
    """`segments` with every occurrence of `query` (ignoring case) drawn in `style` on top."""
    text = "".join(segment.text for segment in segments)
    lowered, needle = text.lower(), query.lower()
    if len(lowered) != len(text) or needle not in lowered:
        return segments  # lower() changed the length (rare scripts): positions would not line up
    marks, at = [], lowered.find(needle)
    while at >= 0:
        marks.append((at, at + len(needle)))
        at = lowered.find(needle, at + len(needle))
    result, position = [], 0
    for segment in segments:
        end = position + len(segment.text)
        cuts = sorted({position, end, *[p for a, b in marks for p in (a, b) if position < p < end]})
        for left, right in zip(cuts, cuts[1:]):
            piece = segment.text[left - position:right - position]
            inside = any(a <= left < b for a, b in marks)
            result.append(Segment(piece, (segment.style or Style()) + style if inside else segment.style))
        position = end
    return result
