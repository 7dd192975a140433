"""What the tap keeps per upstream, per recorded request and per conversation (tui/tap/recorder.py fills it)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tui.sessions.model import RequestRecord, Session
from tui.sessions.replay import Replayer

from tui.tap.conversations import Conversation
from tui.tap.server import Exchange


@dataclass
class Engine:
    """What renders and counts for the upstream: learned from it as the app learns it (tui/client/connect.py)."""

    template: Any
    tokenizer: Any
    cache_rule: str = "llama.cpp"
    info: Any = None
    note: str = ""
    exact: bool | None = None
    cache_config: Any = None  # llama.cpp's cache settings: its slots and prompt cache are then modelled


@dataclass
class Tapped:
    """One recorded request as the view shows it: where it belongs and what it says."""

    exchange: Exchange
    conversation: int = 0
    index: int = 0  # its place in the conversation's session (0-based)
    model: str = ""
    record: RequestRecord | None = None
    view: Any = None  # the engine's RequestView of the exact body
    previous: Any = None  # the view of the conversation's request before it
    client_cut: list[dict] = field(default_factory=list)  # the client's own ledger entries
    problem: str = ""  # why it is not (fully) recorded
    done: bool = False
    format: Any = None  # its wire format (tui.context.formats.FormatKind), once recorded
    carried: list[dict] = field(default_factory=list)  # the context its server held, then its own input (Responses)


@dataclass
class Thread:
    """A conversation's session and everything needed to go on recording it."""

    conversation: Conversation
    session: Session
    replayer: Replayer
    path: Path
    tapped: list[Tapped] = field(default_factory=list)
    next_save: float = 0.0  # time.monotonic() from which the file may be written again
    pending: bool = False  # a later save is on its way
    dirty: bool = False  # changed since, a save is due
    secrets: set[str] = field(default_factory=set, repr=False)  # its own requests' keys: redacted at every save
    engine: Any = None  # what renders and counts its requests (the model's family's, when assumed)
    log: Any = None  # its file's writer (tui/sessions/log_writer.LogWriter): each save appends what is new
    released: int = 0  # its requests before this are in the file only (their bodies let go from memory)
    lock: Any = None  # the lock on its file (tui/sessions/store.SessionLock), held while the tap may write it
    reply_chars: int = 0  # characters of reply text its records keep (tui/tap/recorder.bounded_reply)


class TapReplayer(Replayer):
    """The Replayer, counting as the app does for this upstream: its verdict on the tokenizer, and control
    strings in message text read as tokens when the upstream does so (llama.cpp)."""

    def __init__(self, session: Session, engine: Engine) -> None:
        super().__init__(session, engine.template, engine.tokenizer, engine.cache_rule)
        self.exact = engine.exact
        self.content_specials = bool(engine.info is not None and engine.info.kind == "llama.cpp")

    def body_settings(self, record: RequestRecord, template):
        return replace(super().body_settings(record, template), exact=self.exact,
                       content_specials=self.content_specials)
