"""The ctxpane app: chat on the left, the live context pane on the right, over one Workbench."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from rich.text import Text
from textual import work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import Footer, Header, TextArea

from tui.client.endpoint import Endpoint, EndpointError
from tui.client.errors import ClientError
from tui.client.reply import ReplyAssembler
from tui.context.budget import POLICIES, PolicyError
from tui.context.safety import visible
from tui.context.template_library import TemplateNotFound, builtin_names, builtin_template, load_template
from tui.context.errors import TemplateRenderError
from tui.context.tokens import ENCODINGS, HF_TOKENIZERS, TokenizerNotFound, get_tokenizer
from tui.sessions.model import Session, recover_interrupted_reply
from tui.sessions.store import SessionFileError, SessionLock, SessionLocked, load_session, save_session, session_path

from .chat_panel import ChatPanel
from .composer import Composer
from .config import config_dir, resolve
from .confirm_screen import ConfirmScreen
from .context_pane import ContextPane, PaneData
from .summary import summary_text
from .edit_screen import EditScreen
from .help_screen import HelpScreen
from .message_item import MessageItem
from .picker_screen import PickerScreen
from .samples import sample_session
from .themes import DEFAULT_THEME, load_themes
from .workbench import Workbench, template_from_session


@dataclass
class LaunchOptions:
    file: Path | None = None
    flags: dict = field(default_factory=dict)
    replay: bool = False
    replay_step: int | None = None
    offline: bool = False  # never connect (tests, snapshots)
    sessions_folder: Path | None = None


class CtxpaneApp(App):
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
        self._streaming = False
        self.reply_notes: dict[str, str] = {}  # message id -> why that reply is incomplete
        self.replay_only = False
        self._draft_version = 0
        self.status_line = ""

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

    def _open_after_first_frame(self) -> None:
        self._open_initial_session()
        self.refresh_all()
        for problem in self.problems:
            self.notify(visible(problem), severity="warning", timeout=10)
        if self.options.replay:
            self.replay_only = True
            self.call_after_refresh(self.action_replay, (self.options.replay_step or 1) - 1)
            return
        self.call_after_refresh(self._after_first_frame)

    def _after_first_frame(self) -> None:
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
    def _open_initial_session(self) -> None:
        path = self.options.file
        if path is not None:
            try:
                opened = load_session(path)
                self.read_only = opened.read_only
                recovered = recover_interrupted_reply(opened.session)
                if opened.note:
                    self.notify(visible(opened.note), severity="warning", timeout=10)
                self._adopt(opened.session, path)
                if recovered:
                    self.notify("the last reply was cut short: what had arrived is restored, marked incomplete",
                                severity="warning", timeout=10)
                    self.autosave(now=True)
                return
            except SessionFileError as exc:
                self.notify(visible(str(exc)), title="cannot open session", severity="error", timeout=15)
                self.status_line = f"could not open {path.name}: a new session was started instead"
        if self.options.offline or not (self.settings.base_url or self.settings.scan_local):
            self._adopt(sample_session(), None)
            return
        self._adopt(Session(), None)

    def _adopt(self, session: Session, path: Path | None) -> None:
        if self.lock:
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
        self.wb = Workbench(session, template, self.wb.tokenizer)
        self.wb.restore_previous()
        self.sub_title = session.title
        self.query_one(ChatPanel).show_messages(session.messages, set())

    def autosave(self, now: bool = False) -> None:
        if self.read_only or not self.wb.session.messages:
            return
        if self.session_file is None:
            folder = self.options.sessions_folder
            self.session_file = session_path(self.wb.session, folder)
            self.lock = SessionLock(self.session_file)
            try:
                self.lock.acquire()
            except SessionLocked:
                self.lock = None
        if now:
            self._save()
        elif self._save_timer is None:
            self._save_timer = self.set_timer(0.3, self._save)

    def _save(self) -> None:
        self._save_timer = None
        if self.session_file is None or self.read_only:
            return
        secrets = [self.client.endpoint.auth_headers().get("Authorization", "")[7:]] if self.client else []
        try:
            save_session(self.wb.session, self.session_file, secrets)
        except OSError as exc:
            self.notify(f"could not save the session: {exc}", severity="error")

    # -- the pane ----------------------------------------------------------------------------------
    def refresh_all(self) -> None:
        try:
            self.wb.rebuild()
        except TemplateRenderError as exc:  # the template refuses this conversation: say so, keep going
            self.notify(visible(f"template {self.wb.template.name} rejects the conversation: {exc}"),
                        severity="error", timeout=10)
            self.wb.view = None
        self.query_one(ChatPanel).show_messages(self.wb.session.messages, self._dropped(), self.reply_notes)
        self.refresh_pane()

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
        if self.wb.set_draft(event.text_area.text):
            self.refresh_pane()
            self._schedule_rebuild(0.4)  # the policy may move with the draft: settle after a pause
        else:
            self._schedule_rebuild(0.0)

    def _schedule_rebuild(self, delay: float) -> None:
        if self._rebuild_timer is not None:
            self._rebuild_timer.stop()
        self._rebuild_timer = self.set_timer(delay, self.rebuild_in_background) if delay else None
        if not delay:
            self.rebuild_in_background()

    @work(thread=True, exclusive=True, group="rebuild")
    def rebuild_in_background(self) -> None:
        version = self._draft_version
        try:
            view = self.wb.compute()
        except TemplateRenderError as exc:
            self.call_from_thread(self.notify, visible(f"template error: {exc}"), severity="error")
            return
        self.call_from_thread(self._apply_view, view, version)

    def _apply_view(self, view, version: int) -> None:
        if version != self._draft_version:
            self._schedule_rebuild(0.05)  # typed meanwhile: compute again
            return
        self.wb.view = view
        self.refresh_pane()

    # -- tokenizer and server ----------------------------------------------------------------------
    @work(thread=True, exclusive=True, group="tokenizer")
    def load_tokenizer(self, name: str | None = None) -> None:
        from tui.context.assemble import NATIVE_TOKENIZER
        spec = name or self.settings.tokenizer or self.wb.session.tokenizer or \
            NATIVE_TOKENIZER.get(self.wb.template.name, "o200k_base")
        try:
            tokenizer = get_tokenizer(spec)
        except TokenizerNotFound as exc:
            self.call_from_thread(self.notify, visible(str(exc)), severity="error")
            return
        self.call_from_thread(self._use_tokenizer, tokenizer, None)

    def _use_tokenizer(self, tokenizer, exact) -> None:
        self.wb.set_tokenizer(tokenizer, exact)
        self._schedule_rebuild(0.0)

    @work(exclusive=True, group="connect")
    async def connect_endpoint(self) -> None:
        from tui.client.connect import connect, scan_local
        chat = self.query_one(ChatPanel)
        base = self.settings.base_url or self.wb.session.base_url
        source = self.settings.source.get("base_url", "session")
        if not base and self.settings.scan_local:
            chat.set_status("looking for a local server on 8080, 11434, 1234, 8000…")
            found = await scan_local()
            if found:
                base, source = found[0], f"found {found[1]} on {found[0]}"
        if not base:
            if not self.wb.session.messages:
                self._adopt(sample_session(), None)
                self.refresh_all()
            chat.set_status("offline: no server found. Connect with --base-url URL (or $OPENAI_BASE_URL); "
                            "the pane works on what you type.", "yellow")
            return
        try:
            endpoint = Endpoint.from_env(base, self.settings.model or self.wb.session.model, self.settings.api_key_env)
        except EndpointError as exc:
            chat.set_status(f"bad base URL: {exc}", "red")
            return
        chat.set_status(f"connecting to {endpoint.base_url} ({source})…")
        try:
            connection = await connect(endpoint)
        except ClientError as exc:
            chat.set_status(f"offline: {visible(str(exc))}", "red")
            return
        self.connection, self.client = connection, connection.client
        session = self.wb.session
        session.base_url, session.model = endpoint.base_url, endpoint.model
        info = connection.info
        if connection.template is not None and not self.settings.template:
            self.wb.set_template(connection.template)
        if info.n_ctx and not self.wb.policy.context_window:
            self.wb.set_policy(context_window=int(info.n_ctx))
        self.wb.cache_rule = "llama.cpp" if info.kind == "llama.cpp" else "openai"
        chat.set_status(f"{info.kind} at {endpoint.base_url} · model {endpoint.model} · context "
                        f"{info.n_ctx or '?'} · {connection.note} ({source})")
        if not self.settings.tokenizer:
            if connection.tokenizer == "server":
                from tui.client.server_tokenizer import ServerTokenizer
                self._use_tokenizer(ServerTokenizer(endpoint, set(self.wb.template.special_strings())), True)
            else:
                tokenizer = await asyncio.to_thread(get_tokenizer, connection.tokenizer)
                self._use_tokenizer(tokenizer, connection.exact)

    # -- sending -------------------------------------------------------------------------------------
    def on_composer_submitted(self, event: Composer.Submitted) -> None:
        if self._streaming:
            self.notify("a reply is still streaming: Esc stops it", severity="warning")
            return
        if not event.text.strip():
            return
        if self.client is None:
            self.notify("offline: start with --base-url URL to send; the pane shows what would be sent",
                        severity="warning")
            return
        self.query_one(Composer).clear()
        try:
            body, view = self.wb.commit_draft()
        except TemplateRenderError as exc:
            self.notify(visible(f"not sent: template {self.wb.template.name} rejects the conversation: {exc}"),
                        severity="error", timeout=10)
            return
        self.send(body, view)

    def send(self, body: dict, view) -> None:
        record = self.wb.start_record(body, view)
        chat = self.query_one(ChatPanel)
        chat.show_messages(self.wb.session.messages, self._dropped())
        self.refresh_pane()
        from tui.context.messages import Message
        item = chat.add_message(Message("assistant", ""), len(self.wb.session.messages))
        self._streaming = True
        self.autosave(now=True)
        self.stream_reply(body, record, item)

    @work(exclusive=True, group="reply")
    async def stream_reply(self, body: dict, record, item: MessageItem) -> None:
        assembler = ReplyAssembler()
        last_paint, last_save, note = 0.0, 0.0, ""  # the first piece of a reply is saved at once
        chat = self.query_one(ChatPanel)

        def on_delta(_text: str, progress: ReplyAssembler) -> None:
            nonlocal last_paint, last_save
            now = time.monotonic()
            if now - last_paint > 0.04:
                reply = progress.reply
                item.set_reply(reply.content, reply.reasoning, reply.tool_calls)
                last_paint = now
            if now - last_save > 1.0:  # a kill mid-reply loses at most a second
                self.wb.update_record(record, progress.reply)
                self._save()
                last_save = now

        try:
            await self.client.chat(body, assembler, on_delta, lambda text: chat.set_status(visible(text), "yellow"))
        except asyncio.CancelledError:
            note = "■ stopped: the reply is kept, marked incomplete"
            assembler.reply.incomplete = True
        except ClientError as exc:
            note = f"✗ {visible(str(exc))}"
            assembler.reply.incomplete = True
            assembler.reply.error = str(exc)
        finally:
            self._streaming = False
            reply = assembler.reply
            self.wb.finish_reply(record, reply)
            self._save()
            if note:  # the error stays under the reply it cut short, and in the status line
                chat.set_status(note, "yellow" if note.startswith("■") else "red")
                last = self.wb.session.messages[-1] if self.wb.session.messages else None
                if last is not None and last.role == "assistant":
                    self.reply_notes[last.id] = note
            self.refresh_all()

    def action_stop(self) -> None:
        if self._streaming:
            self.workers.cancel_group(self, "reply")

    # -- message actions ----------------------------------------------------------------------------
    def _focused(self) -> int | None:
        return self.query_one(ChatPanel).focused_index()

    def _changed(self) -> None:
        self.refresh_all()
        self.autosave()

    def action_edit_message(self) -> None:
        index = self._focused()
        if index is None:
            return
        message = self.wb.session.messages[index]

        def done(result) -> None:
            if result is not None:
                self.wb.edit(index, result[0])
                self._changed()
        self.push_screen(EditScreen(f"Edit {message.role} message #{index}", message.text()), done)

    def action_delete_message(self) -> None:
        index = self._focused()
        if index is None:
            return

        def done(yes: bool) -> None:
            if yes:
                self.wb.delete(index)
                self._changed()
        self.push_screen(ConfirmScreen(f"Delete message #{index}?"), done)

    def action_pin_message(self) -> None:
        index = self._focused()
        if index is not None:
            pinned = self.wb.toggle_pin(index)
            self.notify(f"message #{index} {'pinned' if pinned else 'unpinned'}")
            self._changed()

    def action_resend_from_here(self) -> None:
        index = self._focused()
        if index is None or self.client is None or self._streaming:
            return
        messages = self.wb.session.messages
        while index >= 0 and messages[index].role != "user":
            index -= 1
        if index < 0:
            return
        self.wb.truncate_after(index)
        self._changed()
        body, view = self.wb.commit_draft() if not self.wb.draft else (self.wb.request_body(self.wb.rebuild()),
                                                                         self.wb.view)
        self.send(body, view)

    def action_edit_system(self) -> None:
        messages = self.wb.session.messages
        current = messages[0].text() if messages and messages[0].role == "system" else ""

        def done(result) -> None:
            if result is not None:
                self.wb.set_system_prompt(result[0])
                self._changed()
        self.push_screen(EditScreen("System prompt", current), done)

    def action_attach(self) -> None:
        def done(result) -> None:
            if result is None or not result[0].strip():
                return
            text, label = result
            path = Path(label.removeprefix("file:")).expanduser() if label.startswith("file:") else None
            if path is not None and not text.strip("\n") and path.is_file():
                try:
                    text = path.read_text(encoding="utf-8", errors="replace")
                except OSError as exc:
                    self.notify(f"cannot read {path}: {exc}", severity="error")
                    return
            self.wb.add_document(text, label or "document")
            self._changed()
        self.push_screen(EditScreen("Paste a document (sent fenced, as untrusted data)", "", "file:pasted.txt"), done)

    # -- pickers ------------------------------------------------------------------------------------
    def action_pick_template(self) -> None:
        options = [(name, name) for name in builtin_names()]
        if self.connection and self.connection.template:
            options.insert(0, ("@server", f"the server's own ({self.connection.info.kind})"))

        def done(choice: str | None) -> None:
            if choice is None:
                return
            template = self.connection.template if choice == "@server" else builtin_template(choice)
            self.wb.set_template(template)
            self._changed()
        self.push_screen(PickerScreen("Chat template", options, self.wb.template.name), done)

    def action_pick_tokenizer(self) -> None:
        options = [(name, name) for name in [*ENCODINGS, *HF_TOKENIZERS]]

        def done(choice: str | None) -> None:
            if choice is not None:
                self.load_tokenizer(choice)
        self.push_screen(PickerScreen("Tokenizer", options, self.wb.tokenizer.name), done)

    def action_pick_policy(self) -> None:
        def done(choice: str | None) -> None:
            if choice is None:
                return
            try:
                self.wb.set_policy(name=choice)
            except PolicyError as exc:
                self.notify(str(exc), severity="error")
                return
            self._changed()
        self.push_screen(PickerScreen("Truncation policy", [(p, p) for p in POLICIES], self.wb.policy.name), done)

    @work(exclusive=True, group="models")
    async def action_pick_model(self) -> None:
        if self.client is None:
            self.notify("offline: no server to list models from", severity="warning")
            return
        try:
            models = await self.client.list_models()
        except ClientError as exc:
            self.notify(visible(str(exc)), severity="error")
            return

        def done(choice: str | None) -> None:
            if choice:
                self.client.endpoint.model = self.wb.session.model = choice
                self._changed()
        self.push_screen(PickerScreen("Model", [(m, m) for m in models], self.wb.session.model), done)

    def action_toggle_fences(self) -> None:
        self.wb.session.fences = not self.wb.session.fences
        self.notify(f"fences {'on' if self.wb.session.fences else 'off'}")
        self._changed()

    def action_next_tab(self) -> None:
        self.screen.query_one(ContextPane).next_tab()

    def action_help(self) -> None:
        rows = [(b.key_display or b.key, b.description, "app") for b in self.BINDINGS]
        rows += [("enter", "send the message", "composer"), ("alt+enter / ctrl+j", "new line", "composer"),
                 ("tab / shift+tab", "move between chat, messages and pane", "everywhere"),
                 ("ctrl+p", "command palette: every action", "everywhere")]
        keymap = self.settings.keys
        rows = [(keymap.get(b_id, key) if (b_id := next((b.id for b in self.BINDINGS if b.key == key), None)) else key,
                 description, where) for key, description, where in rows]
        self.push_screen(HelpScreen(rows))

    def action_show_all(self) -> None:
        chat = self.query_one(ChatPanel)
        chat.show_all = not chat.show_all
        chat.show_messages(self.wb.session.messages, self._dropped(), self.reply_notes)

    # -- sessions -----------------------------------------------------------------------------------
    def action_replay(self, start: int = 0) -> None:
        from tui.context.assemble import NATIVE_TOKENIZER
        from tui.sessions.replay import Replayer

        from .replay_screen import ReplayScreen
        session = self.wb.session
        if not session.requests:
            self.notify("this session has no requests to replay yet", severity="warning")
            return
        spec = session.tokenizer if session.tokenizer and not session.tokenizer.startswith(("server:", "estimate")) \
            else NATIVE_TOKENIZER.get(self.wb.template.name, "o200k_base")
        try:
            tokenizer = get_tokenizer(spec)
        except TokenizerNotFound as exc:
            self.notify(visible(str(exc)), severity="error")
            return
        self.push_screen(ReplayScreen(session, Replayer(session, self.wb.template, tokenizer), self.roles, start))

    def resend_from_step(self, session: Session, step: int) -> None:
        from tui.sessions.transfer import resend_session
        try:
            copy = resend_session(session, step)
        except ValueError as exc:
            self.notify(visible(str(exc)), severity="error")
            return
        self.autosave(now=True)
        while len(self.screen_stack) > 1:
            self.pop_screen()
        self.read_only, self.replay_only = False, False
        self._adopt(copy, None)
        self.refresh_all()
        self.notify(f"re-sending as a new session: {copy.title} (the old one is kept)")
        if self.client is None:
            self.connect_endpoint()
            self.notify("connecting first: press Enter in an empty composer… or use 'Resend from focused message'")
            return
        body, view = self.wb.commit_draft()
        self.send(body, view)

    def action_open_session(self) -> None:
        from tui.sessions.store import sessions_dir

        from .browser_screen import BrowserScreen
        folder = self.options.sessions_folder or sessions_dir()

        def done(path: Path | None) -> None:
            if path is None or path == self.session_file:
                return
            try:
                opened = load_session(path)
            except SessionFileError as exc:
                self.notify(visible(str(exc)), title="cannot open session", severity="error")
                return
            self.autosave(now=True)
            self.read_only = opened.read_only
            self._adopt(opened.session, path)
            self.refresh_all()
        self.push_screen(BrowserScreen(folder, self.session_file), done)

    def action_new_session(self) -> None:
        self.autosave(now=True)
        self.read_only = False
        session = Session(base_url=self.wb.session.base_url, model=self.wb.session.model)
        self._adopt(session, None)
        self.refresh_all()

    def action_export_markdown(self) -> None:
        from tui.sessions.transfer import export_markdown
        from tui.sessions.store import sessions_dir
        folder = self.session_file.parent if self.session_file else (self.options.sessions_folder or sessions_dir())
        target = folder / f"{self.wb.session.id}.md"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            target.write_text(export_markdown(self.wb.session), encoding="utf-8")
        except OSError as exc:
            self.notify(f"cannot write {target}: {exc}", severity="error")
            return
        self.notify(f"transcript written to {target}")

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        commands = [
            ("Edit system prompt", "change the system prompt", self.action_edit_system),
            ("Attach document", "paste or attach text as an untrusted, fenced message", self.action_attach),
            ("Pick model", "choose from the server's /v1/models", self.action_pick_model),
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
        if self._streaming:
            self._save()
        if self.lock:
            self.lock.release()
