"""The ctxpane app: chat on the left, the live context pane on the right, around one Controller.

The app holds no state of the session. Keys, the palette and widgets' messages become controller
transitions (directly, or after a dialog in dialogs.py); the controller's events come back as
Textual messages to the widgets that show them (updates.py).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, TypeVar

from platformdirs import user_data_dir

from textual import work
from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal
from textual.css.query import NoMatches
from textual.content import Content
from textual.screen import ModalScreen, Screen
from textual.widget import Widget
from textual.widgets import Footer, Header, TextArea

from tui.context.untrusted.visible import visible

from tui.app import actions
from tui.app.clipboard import SafeClipboard
from tui.app.chat.markdown import load_markdown
from tui.app.chat.panel import ChatPanel
from tui.app.chat.composer import Composer
from tui.app.controller_build import BuildsController
from tui.app.composer_actions import ComposerActions, unknown_theme_line
from tui.app.config import config_dir, resolve
from tui.app.pane.pane import ContextPane
from tui.app.textual_runtime import TextualRuntime
from tui.app.slash_commands import take_line
from tui.app.palette import palette_commands
from tui.app.shown import GLYPHS, bounded, one_line, use_glyphs
from tui.app.themes import DEFAULT_THEME, load_themes
from tui.app.messages import ChatUpdated, PaneUpdated, ReplyArrived, ReplyBegan, ReplyFinished, StatusUpdated

if TYPE_CHECKING:
    from tui.app.copying import Copier
    from tui.app.dialogs import Dialogs
    from tui.app.tool_dialogs import ToolDialogs
    from tui.controller import Controller
    from tui.controller.events import Event
    from tui.app.screens.replay import ReplayScreen  # imported when a replay starts: not at start-up

W = TypeVar("W", bound=Widget)


@dataclass
class LaunchOptions:
    file: Path | None = None
    flags: dict = field(default_factory=dict)
    replay: bool = False
    replay_step: int | None = None
    tools: Any = None  # a ToolSet read by --tools (checked before the app starts)
    offline: bool = False  # never connect (tests, snapshots)
    sessions_folder: Path | None = None


def binding_ids() -> set[str]:
    """Every binding config.toml's [keys] may remap: the app's and the transcript's."""
    from tui.app.chat.transcript import ChatView
    return {b.id for b in [*CtxpaneApp.BINDINGS, *ChatView.BINDINGS] if isinstance(b, Binding) and b.id}


class CtxpaneApp(BuildsController, ComposerActions, SafeClipboard):
    TITLE = "ctxpane"
    CSS = """
    #main { height: 1fr; }
    """
    BINDINGS = actions.app_bindings()  # from the one table of actions (actions.py), as are F1's list and the palette
    EDITING = actions.EDITING  # refused, and left out of the footer and the palette, during a replay

    def __init__(self, options: LaunchOptions | None = None) -> None:
        super().__init__()
        self.options = options or LaunchOptions()
        self.settings, self.problems = resolve(self.options.flags, key_ids=binding_ids())
        self.pane_themes, theme_errors = load_themes(config_dir() / "themes")
        self.problems += theme_errors
        self.replay_only = False
        self.quit_warned = False  # what quitting would lose was said once: the next Ctrl+Q quits
        self._prepare_build()  # the controller comes after the first frame (controller_build.py)

    def _new_controller(self) -> Controller:
        from tui.controller import Controller
        built = Controller(self.settings, TextualRuntime(self), self.on_controller_event, self.options.sessions_folder)
        built.tuning.connecting = not self.options.offline  # a send before the link is up waits for it
        return built

    @cached_property
    def copier(self) -> Copier:
        from tui.app.copying import Copier
        return Copier(self)

    @cached_property
    def dialogs(self) -> Dialogs:
        from tui.app.dialogs import Dialogs
        return Dialogs(self, self.controller)

    @cached_property
    def tool_dialogs(self) -> ToolDialogs:
        from tui.app.tool_dialogs import ToolDialogs
        return ToolDialogs(self)

    # -- what scripts and tests reach for -------------------------------------------------------------
    @property
    def wb(self):
        return self.controller.wb

    @property
    def client(self):
        return self.controller.client

    @property
    def session_file(self) -> Path | None:
        return self._controller.file.session_file if self._controller is not None else None

    @property
    def read_only(self) -> bool:
        return self._controller.read_only if self._controller is not None else False

    def closing_line(self) -> str:
        """What to print once the terminal is back: where the session was saved, or why nothing was."""
        return self._controller.closing_line() if self._controller is not None else ""

    @property
    def lock(self):
        return self.controller.file.lock

    @property
    def save_failure(self) -> str | None:
        """What quitting could not save: said on stderr once the terminal is back (launch.py)."""
        return self._controller.file.save_failure if self._controller is not None else None

    def refresh_all(self) -> None:
        """The session was changed from outside the controller's transitions: show it and compute it again."""
        self.controller.refresh()

    def refresh_pane(self) -> None:
        """Show the controller's current view in the pane now (not waiting for a message)."""
        pane = self.controller.pane_state()
        if pane is not None:
            self.main(ContextPane).show_state(pane)

    def autosave(self, now: bool = False) -> None:
        self.controller.file.autosave(now)

    # -- the one way to the screen -------------------------------------------------------------
    def notify(self, message: str, *, title: str = "", severity="information", timeout: float | None = None,
               markup: bool = False) -> None:
        """Every notification (app, screens, widgets) lands here: shown as text, never parsed as markup
        (`markup` is taken for Textual's signature and ignored: no caller can turn markup on)."""
        text = bounded(message, 4000)
        super().notify(text, title=one_line(title), severity=severity, timeout=timeout, markup=False)

    def format_title(self, title: str, sub_title: str) -> Content:
        return super().format_title(one_line(title, 120), one_line(sub_title, 120))

    # -- layout ------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        use_glyphs(self.settings.glyphs)
        yield Header(icon=GLYPHS["icon"])
        with Horizontal(id="main"):
            yield ChatPanel(id="chat")
            yield ContextPane(id="pane")
        yield Footer()

    def main(self, kind: type[W]) -> W:
        """A widget of the main screen, also while a dialog or the replay screen is on top of it."""
        return self.screen_stack[0].query_one(kind)

    def on_load(self) -> None:
        # Before any screen exists, so choosing the theme restyles nothing that is already drawn.
        for pane_theme in self.pane_themes.values():
            self.register_theme(pane_theme.theme)
        wanted = self.settings.theme or DEFAULT_THEME
        if wanted not in self.pane_themes:
            self.problems.append(unknown_theme_line(wanted, self.pane_themes))
        self.theme = wanted if wanted in self.pane_themes else DEFAULT_THEME

    def on_mount(self) -> None:
        self.query_one(ContextPane).set_roles(self.roles)
        if self.settings.keys:
            self.set_keymap(self.settings.keys)
        self.query_one(Composer).focus()
        self.call_after_refresh(self._build_in_background)  # the first frame waits for nothing

    def _open_after_first_frame(self) -> None:
        if self._closing:
            return
        self.set_interval(3.0, self.controller.retry_server_tokenizer)
        self.run_worker(self._start_up(), group="start-up")

    async def _start_up(self) -> None:
        await self.controller.open_first(self.options.file, self.options.offline)  # the file is read off the loop
        if self.options.tools is not None:
            self.controller.tool_calls.use(self.options.tools)
        for problem in self.problems:
            self.notify(visible(problem), severity="warning", timeout=10, markup=False)
        if self.options.replay:
            self.replay_only = True
            self.controller.tuning.connecting = False
            await self.dialogs.replay((self.options.replay_step or 1) - 1)
            return
        self._after_first_frame()

    def _after_first_frame(self) -> None:
        import gc
        gc.collect()
        gc.freeze()  # what start-up built lives on: keep it out of later collections (shorter GC pauses)
        self.controller.load_tokenizer()
        self.controller.recall.preload()
        threading.Thread(target=load_markdown, name="load-markdown", daemon=True).start()
        if not self.options.offline:
            self.controller.connect()
        else:
            from tui.controller.events import Tone
            self.controller.status("offline: connect with --base-url URL (or $OPENAI_BASE_URL)", Tone.CAUTION)

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

    # -- the controller's events, as Textual messages to the widgets that show them ----------------------
    def on_controller_event(self, event: Event) -> None:
        try:
            self._deliver(event)
        except (IndexError, NoMatches):  # not on screen yet, or no longer: nothing to redraw
            pass

    def _deliver(self, event: Event) -> None:
        from tui.controller.events import (ChatChanged, Notice, PaneChanged, ReplyEnded, ReplyGrew, ReplyStarted,
                                           SessionChanged, StatusChanged, ToolCallsWaiting)
        match event:
            case ChatChanged(chat=chat):
                self.main(ChatPanel).post_message(ChatUpdated(chat))
            case PaneChanged(pane=pane):
                self.main(ContextPane).post_message(PaneUpdated(pane))
            case ReplyStarted():
                self.main(ChatPanel).post_message(ReplyBegan())
            case ReplyGrew():
                self.main(ChatPanel).post_message(ReplyArrived(event))
            case ReplyEnded():
                self.main(ChatPanel).post_message(ReplyFinished())
            case StatusChanged(text=text, style=style):
                self.main(ChatPanel).post_message(StatusUpdated(text, style))
            case Notice(text=text, title=title, severity=severity, timeout=timeout):
                self.notify(text, title=title, severity=severity.value, timeout=timeout, markup=False)
            case SessionChanged(title=title, read_only_line=read_only_line, draft=draft):
                self.sub_title = title
                self.main(ChatPanel).show_read_only(read_only_line)
                if draft is not None:
                    self._composer_holds(draft)
            case ToolCallsWaiting(count=count, reason=reason):
                self.tool_dialogs.waiting(count, reason)

    def _composer_holds(self, draft: str) -> None:
        """Another session is open: the composer shows the text left unsent in it (its own undo starts anew: what
        it held before is kept with the session left)."""
        composer = self.main(Composer)
        if composer.text != draft:
            composer.load_text(draft)
            composer.move_cursor(composer.document.end)

    # -- what widgets ask for ------------------------------------------------------------------------
    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        if isinstance(event.text_area, Composer):
            from tui.controller.slash import hint
            self.controller.set_draft(event.text_area.text)
            self.main(ChatPanel).show_hint(hint(event.text_area.text[:40]))

    def on_composer_submitted(self, event: Composer.Submitted) -> None:
        if take_line(self, event.text):
            event.composer.take(event.text)

    def on_replay_screen_resend(self, event: ReplayScreen.Resend) -> None:
        """Re-send from a replayed step, as a new session (the replayed one is kept)."""
        while len(self.screen_stack) > 1:
            self.pop_screen()
        self.replay_only = False
        self.controller.resend_from_step(event.session, event.step)

    # -- keys and the palette ---------------------------------------------------------------------------
    @property
    def replaying(self) -> bool:
        """A replay is shown (alone, or under a dialog): it is read-only."""
        return any(getattr(screen, "READ_ONLY", False) for screen in self.screen_stack)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "focus_step":
            return self._tab_moves_focus(bool(parameters and parameters[0]))
        if action == "edit_system" and isinstance(self.screen, ModalScreen):  # a dialog's editor keeps its Ctrl+E
            return False
        return not (action in self.EDITING and self.replaying)

    def action_stop(self) -> None:
        self.controller.stop()

    def action_edit_message(self) -> None:
        self.dialogs.edit_message()

    def action_delete_message(self) -> None:
        self.dialogs.delete_message()

    def action_pin_message(self) -> None:
        self.dialogs.pin_message()

    def action_resend_from_here(self) -> None:
        self.dialogs.resend_from_here()

    def action_edit_system(self) -> None:
        self.dialogs.edit_system()

    def action_screenshot(self, filename: str | None = None, path: str | None = None) -> None:
        """The palette's Screenshot: an SVG in ctxpane's data folder (Textual's default, ~/Downloads, may not
        exist), said in plain text."""
        folder = Path(path) if path else Path(user_data_dir("ctxpane", appauthor=False)) / "screenshots"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            saved = self.save_screenshot(filename, str(folder))
        except OSError as exc:
            self.notify(one_line(f"screenshot not saved: {exc}"), severity="error", markup=False)
            return
        self.notify(visible(f"screenshot saved: {saved}"), markup=False)

    def deliver_screenshot(self, filename: str | None = None, path: str | None = None,
                           time_format: str | None = None) -> str | None:
        """The palette's Screenshot calls this: Textual's delivers to ~/Downloads, which may not exist ("Failed to
        save screenshot"); it is saved as the Screenshot action saves."""
        self.action_screenshot(filename, path)
        return None

    def action_undo(self) -> None:
        self.controller.history.undo()

    def action_redo(self) -> None:
        self.controller.history.redo()

    def action_show_branch(self, index: int = 0) -> None:
        self.controller.show_branch(index)

    def action_attach(self) -> None:
        self.dialogs.attach()

    def action_load_tools(self) -> None:
        self.tool_dialogs.load()

    def action_answer_tool_calls(self) -> None:
        self.tool_dialogs.open(asked=True)

    def action_pick_template(self) -> None:
        self.dialogs.pick_template()

    def action_pick_tokenizer(self) -> None:
        self.dialogs.pick_tokenizer()

    def action_pick_policy(self) -> None:
        self.dialogs.pick_policy()

    @work(exclusive=True, group="models")
    async def action_pick_model(self) -> None:
        await self.dialogs.pick_model()

    def action_trust_endpoint(self) -> None:
        self.dialogs.trust_endpoint()

    def action_settings(self) -> None:
        from tui.app.screens.settings import SettingsScreen
        tuning = self.controller.tuning
        self.push_screen(SettingsScreen(tuning.values(), tuning.apply, tuning.reconnect))

    def action_reconnect(self) -> None:
        self.controller.tuning.reconnect()

    def action_toggle_fences(self) -> None:
        self.controller.toggle_fences()

    def action_next_tab(self) -> None:
        self.screen.query_one(ContextPane).next_tab()

    def action_help(self) -> None:
        self.dialogs.help()

    @work(exclusive=True, group="replay")
    async def action_replay(self, start: int = 0) -> None:
        await self.dialogs.replay(start)

    def action_open_session(self) -> None:
        self.dialogs.open_session()

    def action_new_session(self) -> None:
        self.controller.new_session()

    def action_export_markdown(self) -> None:
        self.controller.export_markdown()

    def action_search_chat(self) -> None:
        from tui.app.chat.transcript import ChatView
        self.main(ChatView).action_search()

    def action_copy_reply(self) -> None:
        self.copier.copy_reply()

    def action_copy_code(self) -> None:
        self.copier.copy_code()

    def action_copy_exact(self) -> None:
        self.copier.copy_exact()

    def action_copy_document(self) -> None:
        self.copier.copy_document()

    def action_copy_curl(self) -> None:
        self.copier.copy_curl()

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield from palette_commands(self)

    async def action_quit(self) -> None:
        """Quit; but first say once what quitting would lose (a read-only app's draft), with the way to keep it."""
        lost = self.controller.quit_would_lose() if self._controller is not None else ""
        if lost and not self.quit_warned:
            self.quit_warned = True
            self.notify(lost, severity="warning", timeout=15)
            return
        await super().action_quit()

    def on_unmount(self) -> None:
        self._close_controller()
