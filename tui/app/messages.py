"""The controller's events as Textual messages: the app posts each one to the widget that shows it."""

from __future__ import annotations

from textual.message import Message

from tui.controller.events import ReplyEnded, ReplyProgress, ReplyStarted
from tui.controller.snapshot import ChatState, PaneState


class ChatUpdated(Message):
    """For the chat panel: the transcript as it is now."""

    def __init__(self, chat: ChatState) -> None:
        super().__init__()
        self.chat = chat


class ReplyUpdated(Message):
    """For the chat panel: a reply started, grew, or ended."""

    def __init__(self, event: ReplyStarted | ReplyProgress | ReplyEnded) -> None:
        super().__init__()
        self.event = event


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
