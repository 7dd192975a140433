"""The chat side: the messages, a status line and the composer."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Static

from tui.context.messages import Message

from .composer import Composer
from .message_item import MessageItem
from .shown import shown


class ChatPanel(Vertical):
    DEFAULT_CSS = """
    ChatPanel { width: 1fr; min-width: 30; }
    ChatPanel #messages { height: 1fr; }
    ChatPanel #status { height: auto; max-height: 3; color: $text-muted; padding: 0 1; }
    ChatPanel #earlier { height: auto; padding: 0 1; }
    """

    window = 80  # message widgets kept on screen: layout cost grows with every widget
    show_all = False

    def compose(self) -> ComposeResult:
        yield VerticalScroll(Static(id="earlier"), id="messages")
        yield Static(id="status")
        yield Composer(id="composer")

    def show_messages(self, messages: list[Message], dropped: set[int], notes: dict[str, str] | None = None) -> None:
        """Show the newest messages; a long chat keeps only the last `window` as widgets (the pane has all)."""
        notes = notes or {}
        box = self.query_one("#messages", VerticalScroll)
        first = 0 if self.show_all else max(0, len(messages) - self.window)
        earlier = self.query_one("#earlier", Static)
        earlier.display = first > 0
        earlier.update(Text(f"⋯ {first} earlier messages are not listed here (the context pane shows them all; "
                            "palette: 'Show all messages')", style="dim italic"))
        wanted = [MessageItem(m, i, i in dropped, notes.get(m.id, "")) for i, m in enumerate(messages) if i >= first]
        shown = list(box.query_children(MessageItem))
        same = 0  # items already showing exactly this stay: a long chat is not mounted again on each change
        while same < min(len(shown), len(wanted)) and shown[same].signature == wanted[same].signature:
            same += 1
        for item in shown[same:]:
            item.remove()
        if wanted[same:]:
            box.mount_all(wanted[same:])
        box.call_after_refresh(box.scroll_end, animate=False)

    def add_message(self, message: Message, index: int) -> MessageItem:
        item = MessageItem(message, index)
        box = self.query_one("#messages", VerticalScroll)
        box.mount(item)
        box.scroll_end(animate=False)
        return item

    def set_status(self, text: str, style: str = "") -> None:
        self.query_one("#status", Static).update(shown(text, style, limit=2000))

    def focused_index(self) -> int | None:
        focused = self.app.focused
        return focused.index if isinstance(focused, MessageItem) else None
