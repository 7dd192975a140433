"""What the controller tells its listener. Each event is immutable; the app turns them into Textual messages.

Texts in events may come from outside (a server's error, a file name): they are shown through the
app's one way to the screen (tui/app/shown.py), never as markup.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, Protocol

from tui.controller.snapshot import ChatState, PaneState


class Severity(StrEnum):
    """How a notice is shown (Textual's severities, by name)."""

    INFORMATION = "information"
    WARNING = "warning"
    ERROR = "error"


class Tone(StrEnum):
    """The status line's colour, by what the line says."""

    PLAIN = ""
    GOOD = "green"  # it agrees, it is exact, it is connected
    CAUTION = "yellow"  # stopped, estimated, waiting: worth a look
    BAD = "red"  # failed, will not fit
    ASIDE = "magenta"  # a note beside the conversation (a provider's own count)


CONTINUE_KEY = "F10"  # the shipped key of the app's continue_in_new_session (tui/app/actions.py): said in hints

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
    read_only_line: str = ""  # why nothing is written here (who holds the file), for the composer to say
    draft: str | None = None  # the text the composer holds from now on (None: what it holds stays)


@dataclass(frozen=True)
class StatusChanged:
    """The one status line under the transcript: the endpoint, a failure, what is going on."""

    text: str
    style: Tone = Tone.PLAIN


@dataclass(frozen=True)
class Notice:
    """Something to tell the user once (a notification)."""

    text: str
    severity: Severity = Severity.INFORMATION
    title: str = ""
    timeout: float | None = None


class Notify(Protocol):
    """How a part tells the user something once (Parts.notify)."""

    def __call__(self, text: str, *, severity: Severity = ..., title: str = ...,
                 timeout: float | None = ...) -> None: ...


@dataclass(frozen=True)
class ReplyStarted:
    """A request was sent: its reply arrives after the messages until ReplyEnded."""


@dataclass(frozen=True)
class ReplyGrew:
    """More of the reply arrived (sent for every chunk while it streams): `content[content_from:]` and
    `reasoning[reasoning_from:]` are what is new. The texts so far ride along (shared, not copied), so a view
    that missed a piece (it showed another session meanwhile) catches up instead of showing a gap."""

    content: str
    content_from: int = 0
    reasoning: str = ""
    reasoning_from: int = 0
    tool_calls: tuple[dict[str, Any], ...] = ()

    @property
    def added(self) -> str:
        return self.content[self.content_from:]


@dataclass(frozen=True)
class ReplyEnded:
    """The reply ended (finished, stopped or failed); the next ChatChanged holds it as a message."""


class WaitReason(StrEnum):
    """Why ToolCallsWaiting was sent."""

    ARRIVED = "arrived"  # a reply ended with calls
    REVIEWED = "reviewed"  # a review of one ended
    ANSWERED = "answered"  # one was answered, others still wait


@dataclass(frozen=True)
class ToolCallsWaiting:
    """The model's tool calls wait for the user. The view says so; it never opens a dialog for them by itself."""

    count: int
    reason: WaitReason = WaitReason.ARRIVED


Event = (ChatChanged | PaneChanged | SessionChanged | StatusChanged | Notice | ReplyStarted | ReplyGrew
         | ReplyEnded | ToolCallsWaiting)
