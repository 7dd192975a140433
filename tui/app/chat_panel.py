"""The chat side: the transcript, a status line and the composer."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from tui.context.messages import Message

from .chat_view import ChatView
from .composer import Composer
from .shown import shown


class ChatPanel(Vertical):
    DEFAULT_CSS = """
    ChatPanel { width: 1fr; min-width: 30; }
    ChatPanel #messages { height: 1fr; }
    ChatPanel #status { height: auto; max-height: 3; color: $text-muted; padding: 0 1; }
    """

    def compose(self) -> ComposeResult:
        yield ChatView(id="messages")
        yield Static(id="status")
        yield Composer(id="composer")

    @property
    def view(self) -> ChatView:
        return self.query_one(ChatView)

    def show_messages(self, messages: list[Message], dropped: set[int], notes: dict[str, str] | None = None) -> None:
        """Show every message (the view draws only the rows on screen)."""
        self.view.show(messages, dropped, notes)

    def begin_reply(self) -> None:
        self.view.begin_reply()

    def stream_update(self, content: str, reasoning: str = "", tool_calls: list[dict] | None = None,
                      note: str = "") -> None:
        self.view.stream_update(content, reasoning, tool_calls, note)

    def end_reply(self) -> None:
        self.view.end_reply()

    def set_status(self, text: str, style: str = "") -> None:
        self.query_one("#status", Static).update(shown(text, style, limit=2000))

    def focused_index(self) -> int | None:
        return self.view.focused_index()
