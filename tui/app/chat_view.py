"""The chat transcript, drawn line by line (Textual's Line API): only the rows on screen cost anything.

A selection cursor (a bar in the left gutter and a tint) marks the message the keys act on; it is
shown only while the transcript has focus, and the message keys (edit, delete, pin, re-send) are
bound here, so typing in the composer can never trigger them.
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.actions import SkipAction
from textual.binding import Binding
from textual.cache import LRUCache
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from .chat_layout import Block, ChatLayout, Entry, LiveReply
from .shown import drawn

GUTTER = 2  # the bar and a space
MIN_WIDTH = 10


class ChatView(ScrollView, can_focus=True):
    DEFAULT_CSS = """
    ChatView { background: $background; overflow-y: scroll; overflow-x: hidden; }
    ChatView > .chat--cursor { background: $accent 18%; }
    ChatView > .chat--cursor-bar { color: $accent; text-style: bold; }
    ChatView > .chat--bar-user { color: $success 70%; }
    ChatView > .chat--bar-assistant { color: $primary 70%; }
    ChatView > .chat--bar-system { color: $secondary 70%; }
    ChatView > .chat--bar-tool { color: $warning 70%; }
    ChatView > .chat--role-user { color: $text-success; text-style: bold; }
    ChatView > .chat--role-assistant { color: $text-primary; text-style: bold; }
    ChatView > .chat--role-system { color: $text-secondary; text-style: bold; }
    ChatView > .chat--role-tool { color: $text-warning; text-style: bold; }
    ChatView > .chat--meta { color: $text-muted; }
    ChatView > .chat--label { text-style: italic; }
    ChatView > .chat--warn { color: $text-warning; text-style: bold; }
    ChatView > .chat--pin { text-style: bold; }
    ChatView > .chat--dropped { color: $text-muted; text-style: strike; }
    ChatView > .chat--fold { color: $text-muted; text-style: italic; }
    ChatView > .chat--reasoning { color: $text-muted; text-style: italic; }
    ChatView > .chat--calls { color: $text-muted; }
    ChatView > .chat--note { color: $text-warning; text-style: bold; }
    """
    COMPONENT_CLASSES = {"chat--cursor", "chat--cursor-bar", "chat--bar-user", "chat--bar-assistant",
                         "chat--bar-system", "chat--bar-tool", "chat--role-user", "chat--role-assistant",
                         "chat--role-system", "chat--role-tool", "chat--meta", "chat--label", "chat--warn",
                         "chat--pin", "chat--dropped", "chat--fold", "chat--reasoning", "chat--calls", "chat--note"}
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
        Binding("p", "act('pin_message')", "Pin", id="pin_message"),
        Binding("r", "act('resend_from_here')", "Resend from here", id="resend"),
        Binding("i", "leave", "Back to composer", id="to_composer"),
        Binding("escape", "leave", "Back to composer (while a reply arrives: stop it)", show=False),
    ]

    def __init__(self, message_actions: bool = True, **kwargs) -> None:
        super().__init__(**kwargs)
        self.message_actions = message_actions  # off where messages are not the user's to change (replay)
        self.layout_model = ChatLayout()
        self.selected: int | None = None
        self._messages: list = []
        self._dropped: set[int] = set()
        self._notes: dict[str, str] = {}
        self._open_folds: dict[str, frozenset] = {}
        self._live: LiveReply | None = None
        self._strips: LRUCache[tuple, Strip] = LRUCache(1024)
        self._styles: dict[str, Style] = {}
        self._laid_out = False

    # -- what is shown ------------------------------------------------------------------------------
    @property
    def text_width(self) -> int:
        return max(MIN_WIDTH, self.scrollable_content_region.width - GUTTER - 1)

    def show(self, messages: list, dropped: set[int] | None = None, notes: dict[str, str] | None = None) -> None:
        """Show these messages; only messages that changed are wrapped again. A reply arriving stays last."""
        grew = len(messages) > len(self._messages)
        selected_key = self._selected_key()
        self._messages, self._dropped, self._notes = list(messages), set(dropped or ()), dict(notes or {})
        if self.size.width <= 0:
            return  # laid out on the first resize
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
        """The reply so far: only its rows from the last unfinished one on are wrapped again."""
        if self._live is None:
            self.begin_reply()
        self._live.set(content, reasoning, tool_calls, note)
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
        layout = self.layout_model
        if self.size.width <= 0:
            return
        follow = self._at_bottom()
        entries = layout.entries
        if not entries or entries[-1].key != self._live.key or entries[-1].index != len(self._messages):
            self._lay_out()
        else:
            entry = entries[-1]
            old_height = entry.height
            self._live.entry(len(self._messages), self.text_width)  # grows the same entry in place
            layout.live_changed()
            self._forget_rows(entry, self._live.changed_from, max(old_height, entry.height))
            self.virtual_size = Size(self.scrollable_content_region.width, layout.height)
            first = layout.first_row[-2] + self._live.changed_from
            self.refresh_lines(first, max(1, layout.height - first))
        self._settle_scroll(follow, None)

    def _lay_out(self) -> None:
        self.layout_model.update(self._messages, self._dropped, self._notes, self._open_folds, self.text_width,
                                 self._live)
        self._laid_out = True
        self._strips.clear()
        self.virtual_size = Size(self.scrollable_content_region.width, self.layout_model.height)
        self.refresh()

    def _forget_rows(self, entry: Entry, start: int, end: int) -> None:
        for row in range(start, end):
            for cursor in (False, True):
                self._strips.discard((entry.head.serial, entry.body.serial, row, cursor))

    def message_lines(self, index: int) -> list[str]:
        """The rows of message `index` (the reply arriving: index = number of messages) as drawn, without gutter."""
        entry = self.layout_model.entries[index]
        lines = []
        for row in range(entry.height - 1):
            block, start, end = entry.locate(row)
            lines.append(" " * block.indent + drawn(block.text[start:end]))
        return lines

    # -- selection -----------------------------------------------------------------------------------
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
        for at, entry in enumerate(self.layout_model.entries[:len(self._messages)]):
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
        top, rows = self.layout_model.span(at)
        height = self.scrollable_content_region.height
        if top < self.scroll_y or rows > height:
            self.scroll_to(y=top, animate=False)
        elif top + rows > self.scroll_y + height:
            self.scroll_to(y=top + rows - height, animate=False)

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
        if follow:
            self.scroll_to(y=self.max_scroll_y, animate=False)
        elif anchor is not None:
            key, offset = anchor
            at = next((i for i, e in enumerate(self.layout_model.entries) if e.key == key), None)
            if at is not None:
                self.scroll_to(y=max(0, self.layout_model.first_row[at] - offset), animate=False)

    # -- keys and mouse -------------------------------------------------------------------------------
    def action_move(self, delta: int) -> None:
        if self.selected is None or not self._entry_in_view(self.selected):
            self.select(self._entry_near_view(delta))
            return
        self.select(self.selected + delta)

    def action_move_to(self, where: int) -> None:
        self.select(where if where >= 0 else len(self._messages) - 1)

    def action_page(self, direction: int) -> None:
        if not self._messages:
            return
        height = max(1, self.scrollable_content_region.height - 1)
        current = self.selected if self.selected is not None else self._entry_near_view(direction)
        target = self.layout_model.first_row[current] + direction * height
        target = max(0, min(target, self.layout_model.height - 1))
        at = min(self.layout_model.message_at(target), len(self._messages) - 1)
        if at == current:  # a message taller than a page: step past it
            at = current + direction
        self.scroll_to(y=self.scroll_y + direction * height, animate=False)
        self.select(at, scroll=False)
        self._scroll_to_entry(self.selected)

    def _entry_near_view(self, direction: int) -> int:
        """The message to select first: the last one in view going down, the first going up."""
        layout = self.layout_model
        height = self.scrollable_content_region.height
        row = self.scroll_y if direction < 0 else self.scroll_y + height - 1
        at = layout.message_at(round(min(row, layout.height - 1)))
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
        self.scroll_to(y=max(0, self.layout_model.first_row[at] - top), animate=False)

    async def action_act(self, action: str) -> None:
        if not self.message_actions or self.focused_index() is None:
            raise SkipAction()
        await self.app.run_action(action)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "act" and not self.message_actions:
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
        if not self._entry_in_view(self.selected):
            self.select(self._entry_near_view(1) if self._messages else None, scroll=False)
        self._refresh_entry(self.selected)

    def on_blur(self) -> None:
        self._refresh_entry(self.selected)

    def on_resize(self) -> None:
        """Wrap again at the new width, keeping the selected message (or the top one) where it was."""
        if not self._laid_out:
            self._lay_out()
            self.scroll_to(y=self.max_scroll_y, animate=False)
            return
        follow = self._at_bottom()
        anchor = self._anchor()
        self._lay_out()
        if anchor is not None and self._entry_in_view(self.selected):
            follow = False
        self._settle_scroll(follow, anchor)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles.clear()
        self._strips.clear()

    # -- drawing -------------------------------------------------------------------------------------
    def _style(self, name: str) -> Style:
        style = self._styles.get(name)
        if style is None:
            style = self._styles[name] = self.get_component_rich_style(f"chat--{name}", partial=True,
                                                                       default=Style())
        return style

    def render_line(self, y: int) -> Strip:
        row = round(self.scroll_y) + y
        width = self.size.width
        located = self.layout_model.locate(row)
        if located is None:
            return Strip.blank(width, self.rich_style)
        entry, local = located
        cursor = self.has_focus and self.selected is not None and entry.index == self.selected \
            and entry.index < len(self._messages)
        key = (entry.head.serial, entry.body.serial, local, cursor)
        strip = self._strips.get(key)
        if strip is None:
            strip = self._strips[key] = self._render_row(entry, local, cursor)
        return strip.crop_extend(0, width, self.rich_style)

    def _render_row(self, entry: Entry, local: int, cursor: bool) -> Strip:
        width = self.scrollable_content_region.width
        base = self.rich_style + (self._style("cursor") if cursor else Style())
        located = entry.locate(local)
        if located is None:
            return Strip.blank(width, self.rich_style)
        block, start, end = located
        bar = Segment("▌", base + self._style("cursor-bar")) if cursor else \
            Segment("▎", base + self._style(f"bar-{entry.bar}"))
        segments = [bar, Segment(" " * (GUTTER - 1 + block.indent), base)]
        segments += self._text_segments(block, start, end, base, entry)
        return Strip(segments).crop(0, width - 1).extend_cell_length(width, base)

    def _text_segments(self, block: Block, start: int, end: int, base: Style, entry: Entry) -> list[Segment]:
        dim = Style(dim=True) if entry.dropped else None
        cuts = sorted({start, end, *[p for a, b, _ in block.spans for p in (a, b) if start < p < end]})
        segments = []
        for left, right in zip(cuts, cuts[1:]):
            name = next((s for a, b, s in block.spans if a <= left < b), block.style)
            if name == "role":
                name = f"role-{entry.bar}"
            style = base + self._style(name) if name != "body" else base
            segments.append(Segment(drawn(block.text[left:right]), style + dim if dim else style))
        return segments
