"""The chat transcript, drawn line by line (Textual's Line API): only the rows on screen cost anything.

Every message is reachable, however long the session. A selection cursor (a full-block bar and a tint
over the message) marks the message the keys act on; it is shown while the transcript has focus. The
message keys (edit, delete, pin, re-send) are bound here, so typing in the composer never triggers them;
Esc or i goes back to the composer. A reply that is arriving is wrapped again only from its last row.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping

from textual import events
from textual.actions import SkipAction
from textual.binding import Binding
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from tui.app.chat import rows as chat_rows
from tui.app.chat.markdown import RendersMarkdown
from tui.app.chat.layout import ChatLayout, LiveReply
from tui.app.chat.rows import GUTTER, RowPainter
from tui.app.chat.search import Searching
from tui.app.chat.selection import Selecting
from tui.app.safe_inputs import OrderedKeys
from tui.app.shown import drawn

if TYPE_CHECKING:
    from tui.controller.events import ReplyGrew

MIN_WIDTH = 10


class ChatView(OrderedKeys, Selecting, Searching, RendersMarkdown, ScrollView, can_focus=True):
    DEFAULT_CSS = """
    ChatView { background: $background; overflow-y: auto; overflow-x: hidden; scrollbar-gutter: stable; }
    """ + chat_rows.CSS
    COMPONENT_CLASSES = chat_rows.COMPONENT_CLASSES
    BINDINGS = [
        Binding("up,k", "move(-1)", "Previous message", key_display="↑/k", show=False),
        Binding("down,j", "move(1)", "Next message", key_display="↓/j", show=False),
        Binding("home", "move_to(0)", "First message", show=False),
        Binding("end", "move_to(-1)", "Last message", show=False),
        Binding("pageup", "page(-1)", "A page up", show=False),
        Binding("pagedown", "page(1)", "A page down", show=False),
        Binding("enter", "toggle_folds", "Show/hide reasoning and tool calls", show=False),
        Binding("e", "act('edit_message')", "Edit", id="edit_message"),
        Binding("d", "act('delete_message')", "Delete", id="delete_message"),
        Binding("p", "act('pin_message')", "Pin/unpin", id="pin_message"),
        Binding("r", "act('resend_from_here')", "Re-send from here", id="resend"),
        Binding("c", "copy('reply')", "Copy", id="copy_reply"),
        Binding("y", "copy('code')", "Copy code", id="copy_code"),
        Binding("slash,ctrl+f", "search", "Search", key_display="/", id="search_chat"),
        Binding("n", "next_match(1)", "Next match", show=False),
        Binding("N", "next_match(-1)", "Previous match", show=False),
        Binding("ctrl+z", "undo", "Undo", id="undo_message_change"),
        Binding("ctrl+y", "redo", "Redo", id="redo_message_change"),
        Binding("i", "leave", "Back to composer", id="to_composer"),
        Binding("escape", "leave", "Back to composer (while a reply arrives: stop it)", show=False),
    ]

    def __init__(self, message_actions: bool = True, **kwargs) -> None:
        super().__init__(**kwargs)
        self.message_actions = message_actions  # off where messages are not the user's to change (replay)
        self.layout_model = ChatLayout()
        self.painter = RowPainter(self)
        self.selected: int | None = None
        self._messages: list = []
        self._dropped: set[int] = set()
        self._notes: dict[str, str] = {}
        self._open_folds: dict[str, frozenset] = {}
        self._live: LiveReply | None = None
        self._laid_out = False
        self._height = 0  # rows in view at the last resize
        self._widths = (0, 0)  # the view's width and the width rows are drawn at (without the scrollbar)
        self._focused = False

    # -- what is shown ------------------------------------------------------------------------------
    @property
    def text_width(self) -> int:
        return max(MIN_WIDTH, self.scrollable_content_region.width - GUTTER - 1)

    def show(self, messages: list, dropped: set[int] | None = None, notes: dict[str, str] | None = None,
             image_family: str = "", figures: Mapping[str, str] | None = None) -> None:
        """Show these messages; only messages that changed are wrapped again. A reply arriving stays last.
        `figures`: by message id, the line of figures its header shows."""
        grew = len(messages) > len(self._messages)
        selected_key = self._selected_key()
        self.layout_model.image_family = image_family
        self.layout_model.figures = dict(figures or {})
        self._messages, self._dropped, self._notes = list(messages), set(dropped or ()), dict(notes or {})
        if not self._laid_out:
            return  # laid out on the first resize, when the width is known
        follow = grew or self._at_bottom()
        anchor = None if follow else self._anchor()
        self._lay_out()
        self._restore_selection(selected_key)
        self._settle_scroll(follow, anchor)

    def begin_reply(self, streaming: bool = True) -> None:
        """A reply starts arriving: it is shown after the messages until `end_reply`."""
        self._live = LiveReply(streaming)
        self._update_live()

    def stream_update(self, content: str, reasoning: str = "", tool_calls: list[dict] | None = None,
                      note: str = "") -> None:
        """The reply so far: only its rows from the last unfinished one on are wrapped and drawn again."""
        if self._live is None:
            self.begin_reply()
        self._live.set(content, reasoning, tool_calls, note)
        self._update_live()

    def reply_grew(self, grew: ReplyGrew) -> None:
        """More of the reply: its new text is added to what is shown; rows before the last are not wrapped again."""
        if self._live is None:
            self.begin_reply()
        self._live.grew(grew.content, grew.content_from, grew.reasoning, grew.reasoning_from,
                        list(grew.tool_calls) or None)
        self._update_live()

    def end_reply(self) -> None:
        """The reply has ended (the finished message comes with the next `show`)."""
        self._live = None

    @property
    def has_reply(self) -> bool:
        return self._live is not None

    @property
    def streaming(self) -> bool:
        return self._live is not None and self._live.streaming

    def _update_live(self) -> None:
        if not self._laid_out:
            return
        layout = self.layout_model
        follow = self._at_bottom()
        entries = layout.entries
        if not entries or entries[-1].key != self._live.key or entries[-1].index != len(self._messages):
            self._lay_out()
        else:
            entry = entries[-1]
            old_height = entry.height
            self._live.entry(len(self._messages), self.text_width)  # grows the same entry in place
            layout.live_changed()
            changed = self._live.changed_from
            self.painter.forget(entry, changed, max(old_height, entry.height))
            if entry.height != old_height:
                self._set_height(layout.height)
            first = layout.first_row[-2] + changed
            self.refresh_lines(first, max(1, max(old_height, entry.height) - changed))
        self._settle_scroll(follow, None)

    def _set_height(self, height: int) -> None:
        """A new height while a reply grows: a layout of the whole screen only when the scrollbar appears or
        goes; otherwise only the scrollbar is told (a layout on every chunk would cost a frame's time)."""
        size = Size(self._widths[1], height)
        shown = height > self.scrollable_content_region.height
        if shown != self.show_vertical_scrollbar or not shown:
            self.virtual_size = size
            return
        self.set_reactive(ChatView.virtual_size, size)
        scrollbar = self.vertical_scrollbar
        scrollbar.window_virtual_size = height
        scrollbar.window_size = self.scrollable_content_region.height

    def _lay_out(self) -> None:
        self.layout_model.update(self._messages, self._dropped, self._notes, self._open_folds, self.text_width,
                                 self._live)
        self._laid_out = True
        self.painter.clear()
        self._widths = (self.size.width, self.scrollable_content_region.width)
        self.virtual_size = Size(self.scrollable_content_region.width, self.layout_model.height)
        self.refresh()

    def message_lines(self, index: int) -> list[str]:
        """The rows of message `index` (the reply arriving: index = number of messages) as drawn, without gutter."""
        entry = self.layout_model.entries[index]
        lines = []
        for row in range(entry.height - 1):
            block, start, end = entry.locate(row)
            lines.append(" " * block.indent + drawn(block.text[start:end]))
        return lines

    def message_text(self, index: int) -> str:
        """Message `index` as drawn, its wrapped rows joined again (a line break only where the text has one)."""
        entry = self.layout_model.entries[index]
        parts, previous = [], None
        for row in range(entry.height - 1):
            block, start, end = entry.locate(row)
            if previous is not None:
                parts.append("" if previous[0] is block and "\n" not in block.text[previous[1]:start] else "\n")
            parts.append(drawn(block.text[start:end]))
            previous = (block, end)
        return "".join(parts)

    def visible_lines(self) -> list[str]:
        """The rows on screen now, as drawn (bar and gutter included): what a test or a reader sees."""
        return ["".join(segment.text for segment in self.render_line(y)) for y in range(self.size.height)]

    # -- keys and mouse -------------------------------------------------------------------------------
    def action_move(self, delta: int) -> None:
        if self.selected is None or not self._entry_in_view(self.selected):
            self.select(self._entry_near_view(delta))
            return
        self.select(self.selected + delta)

    def action_move_to(self, where: int) -> None:
        self.select(where if where >= 0 else len(self._messages) - 1)

    def action_page(self, direction: int) -> None:
        """Move a page: the view scrolls by its height, the cursor to the message a page away."""
        if not self._messages:
            return
        layout = self.layout_model
        height = max(1, self.scrollable_content_region.height - 1)
        current = self.selected if self._entry_in_view(self.selected) else self._entry_near_view(direction)
        target = max(0, min(layout.first_row[current] + direction * height, layout.height - 1))
        at = min(layout.message_at(target), len(self._messages) - 1)
        if at == current:  # a message taller than a page: step past it
            at = current + direction
        self._scroll(max(0, min(self.scroll_y + direction * height, self._bottom())))
        self.select(at)  # and scrolled further if the page left the message cut at an edge

    def _entry_near_view(self, direction: int) -> int:
        """The message to select first: the last one in view going down, the first going up."""
        layout = self.layout_model
        height = self.scrollable_content_region.height
        row = self.scroll_y if direction < 0 else self.scroll_y + height - 1
        at = layout.message_at(round(max(0, min(row, layout.height - 1))))
        return min(at if at is not None else 0, max(0, len(self._messages) - 1))

    def action_toggle_folds(self) -> None:
        if self.selected is None or self.selected >= len(self._messages):
            return
        entry = self.layout_model.entries[self.selected]
        if not entry.folds:
            return
        opened = self._open_folds.get(entry.key, frozenset())
        self._open_folds[entry.key] = frozenset() if opened else frozenset(entry.folds)
        self._relayout_keeping(self.selected)

    def _toggle_fold(self, at: int, fold: str) -> None:
        key = self.layout_model.entries[at].key
        self._open_folds[key] = self._open_folds.get(key, frozenset()) ^ {fold}
        self._relayout_keeping(at)

    def _relayout_keeping(self, at: int) -> None:
        top = self.layout_model.first_row[at] - round(self.scroll_y)
        self._lay_out()
        self._scroll(max(0, self.layout_model.first_row[at] - top))
        self._fill_view((at, top))

    async def action_act(self, action: str) -> None:
        if not self.message_actions or self.focused_index() is None:
            raise SkipAction()
        await self.app.run_action(action)

    async def action_undo(self) -> None:
        await self.app.run_action("undo")

    async def action_redo(self) -> None:
        await self.app.run_action("redo")

    async def action_copy(self, what: str) -> None:
        await self.app.run_action(f"copy_{what}")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("act", "undo", "redo", "leave") and not self.message_actions:  # a replay: no composer, no edits
            return False
        return True

    def action_leave(self) -> None:
        """Back to the composer; Esc while a reply streams is left to the app (it stops the reply)."""
        composer = next(iter(self.screen.query("Composer")), None)
        if self.streaming or composer is None:
            raise SkipAction()
        composer.focus()

    def on_click(self, event: events.Click) -> None:
        located = self.layout_model.locate(round(self.scroll_y) + event.y)
        if located is None:
            return
        entry, row = located
        at = entry.index
        if at >= len(self._messages):  # the reply arriving is not a message yet
            return
        self.select(at, scroll=False)
        block = entry.locate(row)
        if block is not None and block[0].fold:
            self._toggle_fold(at, block[0].fold)

    def on_focus(self) -> None:
        self._focused = True
        if not self._entry_in_view(self.selected):
            self.select(self._entry_near_view(1) if self._messages else None, scroll=False)
        self._refresh_entry(self.selected)

    def on_blur(self) -> None:
        self._focused = False
        self._refresh_entry(self.selected)

    def on_resize(self) -> None:
        """Wrap again at a new width, keeping the selected message (or the top one) where it was; a view
        that showed the end still shows it."""
        height, self._height = self._height, self.scrollable_content_region.height
        if not self._laid_out:
            self._lay_out()
            self._scroll(self._bottom())
            return
        follow = self.scroll_y >= self.layout_model.height - height - 1 and not self._entry_in_view(self.selected)
        anchor = self._anchor()
        if self.text_width != self.layout_model.width:
            self._lay_out()
        else:
            self.virtual_size = Size(self.scrollable_content_region.width, self.layout_model.height)
            self.painter.clear()
            self._widths = (self.size.width, self.scrollable_content_region.width)
        self._settle_scroll(follow, anchor)

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if round(old_value) != round(new_value):
            self._fill_view()  # scrolled by the mouse, the scrollbar or a key: what comes into view is wrapped

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self.painter.clear(styles=True)

    # -- drawing -------------------------------------------------------------------------------------
    def render_line(self, y: int) -> Strip:
        # Per row only look-ups: sizes and focus are read once per layout, not from the DOM on every row.
        row = round(self.scroll_y) + y
        width, text_region = self._widths
        located = self.layout_model.locate(row)
        if located is None:
            return Strip.blank(width, self.painter.plain)
        entry, local = located
        cursor = self._focused and entry.index == self.selected and entry.index < len(self._messages)
        strip = self.painter.row(entry, local, cursor, text_region)
        return strip if strip.cell_length == width else strip.crop_extend(0, width, self.painter.plain)
