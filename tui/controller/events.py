"""What the controller tells its listener. Each event is immutable; the app turns them into Textual messages.

Texts in events may come from outside (a server's error, a file name): they are shown through the
app's one way to the screen (tui/app/shown.py), never as markup.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .snapshot import ChatState, PaneState


@dataclass(frozen=True)
class ChatChanged:
    """The transcript changed: messages, what is dropped, or a note."""

    chat: ChatState


@dataclass(frozen=True)
class PaneChanged:
    """A newer request view (or the same view with newer settings) is ready for the pane."""

    pane: PaneState


@dataclass(frozen=True)
class SessionChanged:
    """Another session is open, or this one was renamed or became read-only."""

    title: str
    read_only: bool
    path: Path | None


@dataclass(frozen=True)
class StatusChanged:
    """The one status line under the transcript: the endpoint, a failure, what is going on."""

    text: str
    style: str = ""


@dataclass(frozen=True)
class Notice:
    """Something to tell the user once (a notification)."""

    text: str
    severity: str = "information"
    title: str = ""
    timeout: float | None = None


@dataclass(frozen=True)
class ReplyStarted:
    """A request was sent: its reply arrives after the messages until ReplyEnded."""


@dataclass(frozen=True)
class ReplyProgress:
    """The reply so far (sent for every chunk while it streams)."""

    content: str
    reasoning: str = ""
    tool_calls: tuple = ()


@dataclass(frozen=True)
class ReplyEnded:
    """The reply ended (finished, stopped or failed); the next ChatChanged holds it as a message."""


Event = (ChatChanged | PaneChanged | SessionChanged | StatusChanged | Notice | ReplyStarted | ReplyProgress
         | ReplyEnded)
