"""The chat side: the transcript, a status line and the composer, redrawn from the controller's messages."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from tui.context.messages import Message
from tui.controller.events import CONTINUE_KEY
from tui.controller.snapshot import ChatState

from tui.app.chat.transcript import ChatView
from tui.app.chat.composer import Composer
from tui.app.shown import one_line, shown
from tui.app.messages import ChatUpdated, ReplyArrived, ReplyBegan, ReplyFinished, StatusUpdated


class ChatPanel(Vertical):
    DEFAULT_CSS = """
    ChatPanel { width: 1fr; min-width: 30; }
    ChatPanel #messages { height: 1fr; }
    ChatPanel #status { height: auto; max-height: 3; color: $text-muted; padding: 0 1; }
    ChatPanel #slash-hint { height: auto; max-height: 2; color: $accent; padding: 0 1; display: none; }
    ChatPanel #slash-hint.-shown { display: block; }
    ChatPanel Composer.-read-only { border: tall $warning; border-title-color: $warning; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.state = ChatState(-1, ())  # what the transcript shows: message keys act on these messages

    def compose(self) -> ComposeResult:
        yield ChatView(id="messages")
        yield Static(id="status")
        yield Static(id="slash-hint")
        yield Composer(id="composer")

    @property
    def view(self) -> ChatView:
        return self.query_one(ChatView)

    # -- the controller's messages ----------------------------------------------------------------
    def on_chat_updated(self, message: ChatUpdated) -> None:
        if message.chat.generation >= self.state.generation:  # an older picture never replaces a newer one
            self.state = message.chat
            self.view.show(message.chat.messages, message.chat.dropped, message.chat.notes, message.chat.image_family,
                           message.chat.figures)

    def on_reply_began(self, _message: ReplyBegan) -> None:
        self.view.begin_reply()

    def on_reply_arrived(self, message: ReplyArrived) -> None:
        self.view.reply_grew(message.grew)

    def on_reply_finished(self, _message: ReplyFinished) -> None:
        self.view.end_reply()  # the finished reply is shown as a message by the next ChatUpdated

    def on_status_updated(self, message: StatusUpdated) -> None:
        self.set_status(message.text, message.style)

    # -- what the app asks -------------------------------------------------------------------------
    def set_status(self, text: str, style: str = "") -> None:
        self.query_one("#status", Static).update(shown(text, style, limit=2000))

    def show_hint(self, text: str) -> None:
        """The /commands a partly typed line could be, under the status line ("" hides it)."""
        hint = self.query_one("#slash-hint", Static)
        if text != getattr(hint, "shown_text", None):
            hint.shown_text = text
            hint.update(shown(text, "", limit=400))
            hint.set_class(bool(text), "-shown")

    def show_read_only(self, line: str) -> None:
        """`line` ("" when this app writes the session): why nothing typed here can be sent, said on the composer
        itself, with the way on. What the composer holds stays there."""
        composer = self.query_one(Composer)
        composer.set_class(bool(line), "-read-only")
        composer.border_title = f"{one_line(line, 100)} · {CONTINUE_KEY}: continue in a new session" if line else ""
        composer.placeholder = (f"{one_line(line, 100)}: nothing sent from here. {CONTINUE_KEY} (or Ctrl+P, "
                                "Continue in a new session) keeps the whole history in a new session you write"
                                if line else "")

    def focused(self) -> tuple[int, Message] | None:
        """The selected message and its place, only while the transcript has focus."""
        index = self.view.focused_index()
        if index is None or index >= len(self.state.messages):
            return None
        return index, self.state.messages[index]
