"""The transcript's selection and scrolling: which message the keys act on, and keeping it (or the bottom) in
view while the layout changes. A mixin of ChatView (tui/app/chat/transcript.py), which owns the layout it reads."""

from __future__ import annotations

from textual.geometry import Size

from tui.app.chat.layout import SLICE

REST_PAUSE = 0.02  # seconds between two slices of wrapping off screen


class Selecting:
    """Needs from the widget: `layout_model`, `_messages`, `selected`, and ScrollView's scrolling."""

    _filling = False  # in _fill_view (its own scrolling does not start another)
    _rest = None  # the timer of the next slice of wrapping off screen

    def focused_index(self) -> int | None:
        """The selected message, only while the transcript has focus (what the message keys act on)."""
        if self.has_focus and self.selected is not None and self.selected < len(self._messages):
            return self.selected
        return None

    def select(self, index: int | None, scroll: bool = True) -> None:
        if not self._messages:
            index = None
        elif index is not None:
            index = max(0, min(index, len(self._messages) - 1))
        if index != self.selected:
            self._refresh_entry(self.selected)
            self.selected = index
            self._refresh_entry(index)
        if scroll and index is not None:
            self._scroll_to_entry(index)

    def _selected_key(self) -> str | None:
        entries = self.layout_model.entries
        if self.selected is None or self.selected >= len(entries):
            return None
        return entries[self.selected].key

    def _restore_selection(self, key: str | None) -> None:
        if self.selected is None:
            return
        entries = self.layout_model.entries
        if self.selected < len(self._messages) and entries[self.selected].key == key:
            return
        for at, entry in enumerate(entries[:len(self._messages)]):
            if entry.key == key:
                self.selected = at
                return
        self.selected = min(self.selected, len(self._messages) - 1) if self._messages else None

    def _refresh_entry(self, at: int | None) -> None:
        if at is not None and at < len(self.layout_model.entries):
            top, rows = self.layout_model.span(at)
            self.refresh_lines(top, rows)

    def _scroll_to_entry(self, at: int) -> None:
        """Scroll so the whole message shows, or its first rows when it is taller than the view."""
        if self.layout_model.wrap_near(at, 0, 0):  # its real height, not a guess
            self._set_virtual_height()
        top, rows = self.layout_model.span(at)
        rows += at == len(self.layout_model.entries) - 1  # the last one: down to the end
        height = self.scrollable_content_region.height
        if top < self.scroll_y or rows > height:
            self._scroll(top)
        elif top + rows > self.scroll_y + height:
            self._scroll(top + rows - height)

    def _at_bottom(self) -> bool:
        return self.scroll_y >= self.max_scroll_y - 1

    def _anchor(self) -> tuple[str, int] | None:
        """The message to keep in place, and its first row's distance from the top of the view."""
        layout = self.layout_model
        if not layout.entries:
            return None
        at = self.selected if self._entry_in_view(self.selected) else layout.message_at(round(self.scroll_y))
        if at is None:
            return None
        return layout.entries[at].key, layout.first_row[at] - round(self.scroll_y)

    def _entry_in_view(self, at: int | None) -> bool:
        if at is None or at >= len(self.layout_model.entries):
            return False
        top, rows = self.layout_model.span(at)
        return top < self.scroll_y + self.scrollable_content_region.height and top + rows > self.scroll_y

    def _settle_scroll(self, follow: bool, anchor: tuple[str, int] | None) -> None:
        keep = None
        if follow:
            self._scroll(self._bottom())
        elif anchor is not None:
            key, offset = anchor
            at = next((i for i, e in enumerate(self.layout_model.entries) if e.key == key), None)
            if at is not None:
                self._scroll(max(0, self.layout_model.first_row[at] - offset))
                keep = (at, offset)
        self._fill_view(keep)

    def _fill_view(self, keep: tuple[int, int] | None = None) -> None:
        """Wrap the messages on screen and a screen's height either side (the layout only guessed the height of
        messages it had not wrapped); a small rest at once, a big one a slice at a time (`_wrap_rest`)."""
        layout = self.layout_model
        if self._filling or not layout.entries or not self._laid_out:
            return
        height = max(1, self.scrollable_content_region.height)
        keep = self._keeping(keep)
        self._filling = True
        try:
            if keep is None:
                layout.wrap_near(len(layout.entries) - 1, 2 * height, 0)
            else:
                layout.wrap_near(keep[0], max(0, keep[1]) + height, 2 * height - keep[1])
            if 0 < layout.pending <= SLICE:  # a small session is wrapped whole, as its Markdown is asked for
                layout.wrap_some(ask=True)
            self._hold(keep)
        finally:
            self._filling = False
        self._ask_markdown()
        if layout.pending and self._rest is None:
            self._rest = self.set_timer(REST_PAUSE, self._wrap_rest)

    def _wrap_rest(self) -> None:
        """Wrap a slice of the messages still not wrapped, then let the loop breathe: the scrollbar ends exact."""
        self._rest = None
        layout = self.layout_model
        if not layout.pending or not layout.entries or self._filling:
            return
        keep = self._keeping(None)
        self._filling = True
        try:
            layout.wrap_some()
            self._hold(keep)
        finally:
            self._filling = False
        if layout.pending:
            self._rest = self.set_timer(REST_PAUSE, self._wrap_rest)

    def _keeping(self, keep: tuple[int, int] | None) -> tuple[int, int] | None:
        """What stays where it is on screen while heights change: (message, its first row's distance from the
        top of the view), by default the selected message in view or else the top one; None: the end."""
        if keep is not None:
            return keep
        layout, top = self.layout_model, round(self.scroll_y)
        if top >= self._bottom() - 1:
            return None
        at = self.selected if self._entry_in_view(self.selected) else layout.message_at(top)
        return at, layout.first_row[at] - top

    def _hold(self, keep: tuple[int, int] | None) -> None:
        """After wraps that changed heights: the new size, and the scroll that keeps `keep` in place."""
        layout = self.layout_model
        if not layout.moved:
            return
        self._set_virtual_height()
        self._scroll(self._bottom() if keep is None else max(0, layout.first_row[keep[0]] - keep[1]))

    def _set_virtual_height(self) -> None:
        self.virtual_size = Size(self.scrollable_content_region.width, self.layout_model.height)
        self.refresh()

    def _scroll(self, y: float) -> None:
        """Scroll now (not after the next refresh), even before the scrollbar has caught up with the layout."""
        self.scroll_to(y=y, animate=False, immediate=True, force=True)
        self.vertical_scrollbar.position = self.scroll_y  # a bar shown after this scroll starts in the right place

    def _bottom(self) -> int:
        """The last scroll position, from the layout (the scrollbars may not have caught up yet)."""
        return max(0, self.layout_model.height - self.scrollable_content_region.height)
