"""The controller's events as Textual messages: the app posts each one to the widget that shows it."""

from __future__ import annotations

from textual.message import Message

from tui.controller.events import ReplyGrew
from tui.controller.snapshot import ChatState, PaneState


class ChatUpdated(Message):
    """For the chat panel: the transcript as it is now."""

    def __init__(self, chat: ChatState) -> None:
        super().__init__()
        self.chat = chat


class ReplyBegan(Message):
    """For the chat panel: a request was sent; its reply is shown after the messages until ReplyFinished."""


class ReplyArrived(Message):
    """For the chat panel: more of the reply (the controller's ReplyGrew: what is new, and where it starts)."""

    def __init__(self, grew: ReplyGrew) -> None:
        super().__init__()
        self.grew = grew


class ReplyFinished(Message):
    """For the chat panel: the reply ended; the next ChatUpdated holds it as a message."""


class StatusUpdated(Message):
    """For the chat panel: the status line (text from outside is shown as text, never markup)."""

    def __init__(self, text: str, style: str = "") -> None:
        super().__init__()
        self.text, self.style = text, style


class PaneUpdated(Message):
    """For the context pane: a newer request view and what its tabs show."""

    def __init__(self, pane: PaneState) -> None:
        super().__init__()
        self.pane = pane
