"""The ctxpane app: chat on the left, the live context pane on the right, over one Workbench."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from rich.text import Text
from textual import work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal
from textual.screen import Screen
from textual.content import Content
from textual.widgets import Footer, Header, TextArea

from tui.context.safety import visible
from tui.context.template_library import TemplateNotFound, builtin_template, load_template
from tui.context.errors import TemplateRenderError
from tui.sessions.model import Session, recover_interrupted_reply
from tui.sessions.store import SessionFileError, SessionLock, SessionLocked, load_session

from .chat_panel import ChatPanel
from .composer import Composer
from .config import config_dir, resolve
from .context_pane import ContextPane, PaneData
from .summary import summary_text
from .samples import sample_session
from .shown import bounded, one_line
from .themes import DEFAULT_THEME, load_themes
from .message_actions import MessageActionsMixin
from .sending import SendingMixin
from .session_actions import SessionActionsMixin
from .workbench import CharEstimate, Workbench, template_from_session


LARGE_DRAFT = 1 << 15  # characters: past this, typing never waits for the pane


@dataclass
class LaunchOptions:
    file: Path | None = None
    flags: dict = field(default_factory=dict)
    replay: bool = False
    replay_step: int | None = None
    offline: bool = False  # never connect (tests, snapshots)
    sessions_folder: Path | None = None


class CtxpaneApp(SendingMixin, MessageActionsMixin, SessionActionsMixin, App):
    TITLE = "ctxpane"
    CSS = """
    #main { height: 1fr; }
    """
    BINDINGS = [
        Binding("f1", "help", "Help", id="help"),
        Binding("escape", "stop", "Stop reply", id="stop"),
        Binding("ctrl+e", "edit_system", "System prompt", id="edit_system"),
        Binding("ctrl+o", "attach", "Attach doc", id="attach"),
        Binding("ctrl+t", "next_tab", "Next tab", id="next_tab"),
        Binding("f2", "pick_model", "Model", id="pick_model"),
        Binding("f3", "pick_template", "Template", id="pick_template"),
        Binding("f4", "pick_policy", "Policy", id="pick_policy"),
        Binding("f5", "toggle_fences", "Fences", id="toggle_fences"),
        Binding("e", "edit_message", "Edit", id="edit_message", show=False),
        Binding("d", "delete_message", "Delete", id="delete_message", show=False),
        Binding("p", "pin_message", "Pin", id="pin_message", show=False),
        Binding("r", "resend_from_here", "Resend from here", id="resend", show=False),
        Binding("ctrl+q", "quit", "Quit", id="quit"),
    ]

    def __init__(self, options: LaunchOptions | None = None) -> None:
        super().__init__()
        self.options = options or LaunchOptions()
        self.settings, self.problems = resolve(self.options.flags)
        self.pane_themes, theme_errors = load_themes(config_dir() / "themes")
        self.problems += theme_errors
        self.client = None
        self.connection = None
        self.session_file: Path | None = None
        self.lock: SessionLock | None = None
        self.read_only = False
        self.wb = Workbench(Session(), builtin_template("chatml"))
        self._rebuild_timer = None
        self._save_timer = None
        self._writer = None  # the session writer thread, made at the first save (session_actions.py)
        self._unsaved = False  # changed since the last snapshot was handed to the writer
        self.save_failure: str | None = None  # what quitting could not save, told after the app ends
        self._tokenizer_settled = False  # the first tokenizer load has ended (loaded or failed)
        self._streaming = False
        self.reply_notes: dict[str, str] = {}  # message id -> why that reply is incomplete
        self.replay_only = False
        self._draft_version = 0
        self.trusted_urls: set[str] = set()  # URLs from files the user agreed to send the key to

    # -- the one way to the screen -------------------------------------------------------------
    def notify(self, message: str, *, title: str = "", severity="information", timeout: float | None = None,
               markup: bool = False) -> None:
        """Every notification (app, screens, widgets) lands here: shown as text, never parsed as markup."""
        super().notify(bounded(message, 4000), title=one_line(title), severity=severity, timeout=timeout,
                       markup=False)

    def format_title(self, title: str, sub_title: str) -> Content:
        return super().format_title(one_line(title, 120), one_line(sub_title, 120))

    # -- layout ------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="main"):
            yield ChatPanel(id="chat")
            yield ContextPane(id="pane")
        yield Footer()

    def on_load(self) -> None:
        # Before any screen exists, so choosing the theme restyles nothing that is already drawn.
        for pane_theme in self.pane_themes.values():
            self.register_theme(pane_theme.theme)
        wanted = self.settings.theme or DEFAULT_THEME
        self.theme = wanted if wanted in self.pane_themes else DEFAULT_THEME

    def on_mount(self) -> None:
        self.query_one(ContextPane).set_roles(self.roles)
        if self.settings.keys:
            self.set_keymap(self.settings.keys)
        self.query_one(Composer).focus()
        self.call_after_refresh(self._open_after_first_frame)  # the first frame waits for nothing
        self.set_interval(3.0, self.retry_server_tokenizer)

    def _open_after_first_frame(self) -> None:
        path = self.options.file
        if path is not None:  # read and checked in a worker: a long session never holds the first screen
            self.query_one(ChatPanel).set_status(f"opening {one_line(path.name, 200)}…")
            self.open_in_background(path)
            return
        self._adopt_new()
        self._after_open()

    @work(thread=True, exclusive=True, group="open")
    def open_in_background(self, path: Path) -> None:
        try:
            opened = load_session(path)
        except SessionFileError as exc:
            self.call_from_thread(self._open_failed, path, exc)
            return
        recovered = recover_interrupted_reply(opened.session)  # the session is no one else's yet
        self.call_from_thread(self._opened, opened, path, recovered)

    def _opened(self, opened, path: Path, recovered: bool) -> None:
        self.read_only = opened.read_only
        if opened.note:
            self.notify(visible(opened.note), severity="warning", timeout=10)
        self._adopt(opened.session, path, keep_draft=True)  # what was typed while the file was read
        self.query_one(ChatPanel).set_status("")
        if recovered:
            self.notify("the last reply was cut short: what had arrived is restored, marked incomplete",
                        severity="warning", timeout=10)
            self.autosave(now=True)
        self._after_open()

    def _open_failed(self, path: Path, exc: SessionFileError) -> None:
        self.notify(visible(str(exc)), title="cannot open session", severity="error", timeout=15)
        self._adopt_new(keep_draft=True)
        self.query_one(ChatPanel).set_status(f"could not open {path.name}: a new session was started "
                                             "instead (the file is left as it is)", "red")
        self._after_open()

    def _after_open(self) -> None:
        self.refresh_all()
        for problem in self.problems:
            self.notify(visible(problem), severity="warning", timeout=10)
        if self.options.replay:
            self.replay_only = True
            self.call_after_refresh(self.action_replay, (self.options.replay_step or 1) - 1)
            return
        self.call_after_refresh(self._after_first_frame)

    def _after_first_frame(self) -> None:
        import gc
        gc.collect()
        gc.freeze()  # what start-up built lives on: keep it out of later collections (shorter GC pauses)
        self.load_tokenizer()
        if not self.options.offline:
            self.connect_endpoint()
        else:
            self.query_one(ChatPanel).set_status("offline: connect with --base-url URL (or $OPENAI_BASE_URL)", "yellow")

    def watch_theme(self, name: str) -> None:
        pane_theme = self.pane_themes.get(name)
        if pane_theme is not None and self.screen_stack:
            for pane in self.screen.query(ContextPane):
                pane.set_roles(pane_theme.roles)
            self.refresh_pane()

    @property
    def roles(self) -> dict[str, str]:
        pane_theme = self.pane_themes.get(self.theme)
        return pane_theme.roles if pane_theme else {}

    # -- session -------------------------------------------------------------------------------
    def _adopt_new(self, keep_draft: bool = False) -> None:
        if self.options.offline or not (self.settings.base_url or self.settings.scan_local):
            self._adopt(sample_session(), None, keep_draft)
            return
        self._adopt(Session(), None, keep_draft)

    def _adopt(self, session: Session, path: Path | None, keep_draft: bool = False) -> None:
        if self.lock:  # let go of the old file once what was handed to the writer for it has landed
            if self._writer is not None:
                self._writer.after_pending(self.lock.release)
            else:
                self.lock.release()
            self.lock = None
        if path is not None and not self.read_only:
            lock = SessionLock(path)
            try:
                lock.acquire()
                self.lock = lock
            except SessionLocked as exc:
                self.read_only = True
                self.notify(visible(str(exc)) + " — opened read-only", severity="warning", timeout=15)
        self.session_file = path
        try:
            template = load_template(self.settings.template) if self.settings.template else \
                template_from_session(session.template)
        except (TemplateNotFound, OSError) as exc:
            self.notify(visible(str(exc)), severity="error")
            template = builtin_template("chatml")
        tokenizer, draft = self.wb.tokenizer, self.wb.draft if keep_draft else ""
        self.wb = Workbench(session, template, tokenizer, draft=draft)
        # Until the first tokenizer has loaded, the boundary waits for it: read once, with the right one.
        self.wb.tokenizer_pending = isinstance(tokenizer, CharEstimate) and not self._tokenizer_settled
        self.reply_notes = {}  # notes belong to this session's messages only
        self.sub_title = session.title
        self.query_one(ChatPanel).show_messages(session.messages, set())

    # -- the pane ----------------------------------------------------------------------------------
    def refresh_all(self) -> None:
        """The chat now; the pane when a worker has rendered the conversation (templates can be slow)."""
        self._show_chat()
        self._schedule_rebuild(0.0)

    def _show_chat(self) -> None:
        self.query_one(ChatPanel).show_messages(self.wb.session.messages, self._dropped(), self.reply_notes)

    def _dropped(self) -> set[int]:
        return {e.message for e in self.wb.view.ledger} if self.wb.view else set()

    def refresh_pane(self) -> None:
        view = self.wb.view
        if view is None:
            return
        wb = self.wb
        url = (self.client.endpoint.base_url if self.client else wb.session.base_url or "http://127.0.0.1:8080/v1")
        data = PaneData(self._summary(view), wb.messages_with_draft(),
                        len(wb.session.messages) if wb.draft else None, wb.previous, wb.policy.context_window,
                        wb.policy.max_tokens, self.roles, wb.session.requests, wb.costs(), url + "/chat/completions",
                        wb.request_body(view), self.settings.api_key_env)
        self.query_one(ContextPane).show(view, data)

    def _summary(self, view) -> Text:
        return summary_text(view, self.wb.policy, self.wb.previous is not None, self.read_only)

    # -- typing ------------------------------------------------------------------------------------
    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        if not isinstance(event.text_area, Composer):
            return
        self._draft_version += 1
        text = event.text_area.text
        if len(text) > LARGE_DRAFT or len(self.wb.draft) > LARGE_DRAFT:
            # A big draft: the key is echoed now; the pane follows once typing pauses, computed in a
            # worker, where only the changed piece of the draft is encoded again (SegmentCache).
            self.wb.draft = text
            self._schedule_rebuild(0.1)
            return
        if self.wb.set_draft(text):
            self.refresh_pane()
            self._schedule_rebuild(0.4)  # the policy may move with the draft: settle after a pause
        else:
            self._schedule_rebuild(0.0)

    def _schedule_rebuild(self, delay: float) -> None:
        self._draft_version += 1  # any change of state, not only of the draft, outdates a running compute
        if self._rebuild_timer is not None:
            self._rebuild_timer.stop()
        self._rebuild_timer = self.set_timer(delay, self.rebuild_in_background) if delay else None
        if not delay:
            self.rebuild_in_background()

    @work(thread=True, exclusive=True, group="rebuild")
    def rebuild_in_background(self) -> None:
        version = self._draft_version  # read first: a change after this makes the result stale
        try:
            view = self.wb.compute()
        except TemplateRenderError as exc:  # the template refuses this conversation: say so, keep going
            self.call_from_thread(self._template_failed, exc, version)
            return
        self.call_from_thread(self._apply_view, view, version)

    def _template_failed(self, exc: TemplateRenderError, version: int) -> None:
        if version != self._draft_version:
            return
        self.notify(f"template {self.wb.template.name} rejects the conversation: {exc}", severity="error",
                    timeout=10)
        self.wb.view = None
        self._show_chat()

    def _apply_view(self, view, version: int) -> None:
        if version != self._draft_version:
            self._schedule_rebuild(0.05)  # changed meanwhile: compute again
            return
        dropped_before = self._dropped()
        self.wb.view = view
        if self._dropped() != dropped_before:
            self._show_chat()
        self.refresh_pane()

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        commands = [
            ("Edit system prompt", "change the system prompt", self.action_edit_system),
            ("Attach document", "paste or attach text as an untrusted, fenced message", self.action_attach),
            ("Pick model", "choose from the server's /v1/models", self.action_pick_model),
            ("Send my API key to this endpoint", "trust the URL the session named with your key",
             self.action_trust_endpoint),
            ("Pick template", "chat template used to render the document", self.action_pick_template),
            ("Pick tokenizer", "tokenizer used to count", self.action_pick_tokenizer),
            ("Pick truncation policy", "keep-all, drop-oldest, keep-last-n, summarise", self.action_pick_policy),
            ("Toggle fences", "fence untrusted text (on by default)", self.action_toggle_fences),
            ("Stop reply", "cancel the streaming reply, keeping what arrived", self.action_stop),
            ("Edit focused message", "edit the message that has focus", self.action_edit_message),
            ("Delete focused message", "delete the message that has focus", self.action_delete_message),
            ("Pin focused message", "never drop it", self.action_pin_message),
            ("Resend from focused message", "drop what follows and send again", self.action_resend_from_here),
            ("Next pane tab", "document, tokens, cache, ledger, cost, request, diff", self.action_next_tab),
            ("Replay this session", "step through its requests as they were sent", self.action_replay),
            ("Show all messages", "list every message in the chat, not only the newest", self.action_show_all),
            ("Open session", "browse, search, rename, delete saved sessions", self.action_open_session),
            ("New session", "start an empty conversation (this one is saved)", self.action_new_session),
            ("Export transcript", "write the conversation as Markdown beside the session", self.action_export_markdown),
            ("Help", "all keys", self.action_help),
        ]
        for name in self.pane_themes:
            commands.append((f"Theme: {name}", "switch the theme", lambda n=name: setattr(self, "theme", n)))
        for title, help_text, callback in commands:
            yield SystemCommand(title, help_text, callback)

    def on_unmount(self) -> None:
        self.finish_saving()  # the last state, then a bounded wait; a failure is told when the app ends
        if self.lock and self.save_failure is None:
            self.lock.release()
