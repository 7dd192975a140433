"""What a transition may reach: the open session's state, the link, the file, the runtime, the worker, the
history and the way to tell the view. Transitions take these Parts, not the Controller: a module that needs
another transition is handed that one function by name (editing gets `send`), so what it can change is
read off its constructor.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Protocol

from tui.controller.events import Event, Notice, Severity, StatusChanged, Tone

if TYPE_CHECKING:
    from tui.client.http import OpenAIClient
    from tui.controller.compute import ComputeWorker
    from tui.controller.history import History
    from tui.controller.link import Link
    from tui.controller.runtime import Runtime
    from tui.controller.session_file import SessionFile
    from tui.controller.workbench import Workbench


class Settings(Protocol):
    """What the controller reads of the app's settings (tui/app/config.py's Settings has these and more: the
    controller reads the others, config.toml's tables, with getattr and a default)."""

    base_url: str  # set when the user types a URL in the settings screen
    model: str
    api_key_env: str  # set when the user names another variable in the settings screen
    template: str
    tokenizer: str
    scan_local: bool
    source: dict[str, str]  # where base_url etc. came from
    api: str  # the API the chat speaks: "" or chat (completions), responses, messages


class Parts:
    """Shared by the controller and its transitions; the controller fills in `file` and `history`, which are
    built from the parts themselves, and says how a change is made known (`on_change`) and whether a reply is
    streaming (`is_streaming`)."""

    file: SessionFile
    history: History

    def __init__(self, settings: Settings, runtime: Runtime, link: Link, worker: ComputeWorker, wb: Workbench,
                 listener: Callable[[Event], None]) -> None:
        self.settings, self.runtime, self.link, self.worker = settings, runtime, link, worker
        self.wb = wb  # the open session's workbench: another takes its place when a session opens
        self.generation = 0  # bumped by every change of state: a result computed before it is stale
        self.notes: dict[str, str] = {}  # message id -> why that reply is incomplete
        self.listener = listener
        self.on_change: Callable[[bool], None] = lambda save: None
        self.is_streaming: Callable[[], bool] = lambda: False

    @property
    def client(self) -> OpenAIClient | None:
        return self.link.client

    @property
    def read_only(self) -> bool:
        return self.file.read_only

    @property
    def streaming(self) -> bool:
        return self.is_streaming()

    def emit(self, event: Event) -> None:
        self.listener(event)

    def notify(self, text: str, *, severity: Severity = Severity.INFORMATION, title: str = "",
               timeout: float | None = None) -> None:
        self.emit(Notice(text, Severity(severity), title, timeout))

    def status(self, text: str, style: Tone = Tone.PLAIN) -> None:
        self.emit(StatusChanged(text, Tone(style)))

    def changed(self, save: bool = True) -> None:
        """The state changed: shown again, computed again, saved soon (unless `save` is false)."""
        self.on_change(save)
