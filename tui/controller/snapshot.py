"""What the views are given: immutable pictures of the controller's state, one per change.

A snapshot never changes after it is made. The controller replaces messages instead of changing
them, so an older snapshot still shows the conversation as it was, and comparing two snapshots
tells a view whether anything it shows has changed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:  # annotations only: the chat's first frame imports this module, not the engine
    from tui.context.policy.truncation import PolicySettings
    from tui.context.cache.prefix import RequestShape
    from tui.context.messages import Message
    from tui.context.request import RequestView
    from tui.context.fit.window import FitCheck
    from tui.sessions.model import RequestRecord

NO_NOTES: Mapping[str, str] = MappingProxyType({})


def frozen_notes(notes: Mapping[str, str]) -> Mapping[str, str]:
    """A read-only copy: later notes do not show up in a snapshot already made."""
    return MappingProxyType(dict(notes)) if notes else NO_NOTES


@dataclass(frozen=True)
class ChatState:
    """The transcript: the messages, which of them the policy drops, and the notes under replies."""

    generation: int
    messages: tuple[Message, ...]
    dropped: frozenset[int] = frozenset()
    notes: Mapping[str, str] = field(default_factory=lambda: NO_NOTES)  # message id -> why that reply is incomplete
    image_family: str = ""  # how images are counted for their labels (tui/context/images/tokens.py)
    figures: Mapping[str, str] = field(default_factory=lambda: NO_NOTES)  # message id -> its figures' line


@dataclass(frozen=True)
class PaneState:
    """The context pane: the request as computed, and what the tabs show beside it."""

    generation: int
    view: RequestView
    messages: tuple[Message, ...]  # the session's messages and the draft, for notes and search
    draft_index: int | None
    previous: RequestShape | None
    policy: PolicySettings
    requests: tuple[RequestRecord, ...] = ()
    costs: tuple[dict[str, Any], ...] = ()  # the Cost tab's row of each request (tui/sessions/receipts.py)
    url: str = ""
    body: Mapping[str, Any] = field(default_factory=dict)
    key_env: str = "OPENAI_API_KEY"
    read_only: bool = False
    what_if: str = ""  # a template picked in the app while the server renders its own: what that means
    fit: FitCheck | None = None  # the request as it stands (draft included) against the server's real window
    assumed: str = ""  # a gateway hides the server's template: the one assumed, and where that was learned
    reviews: tuple[Any, ...] = ()  # the isolated reviewer's requests and verdicts (tool_calls.Review), newest last


@dataclass(frozen=True)
class Snapshot:
    """Everything at one moment: what each view shows, and the settings the status lines name."""

    generation: int
    chat: ChatState
    pane: PaneState | None
    draft: str
    streaming: bool
    title: str
    read_only: bool
    session_file: Path | None
    template: str
    tokenizer: str
    policy: str
    model: str
    base_url: str
    connected: bool
