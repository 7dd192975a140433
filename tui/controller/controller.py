"""The session's state and every change to it, as plain Python: no widget, no UI toolkit.

One Controller owns the open session (through its Workbench), the file it is kept in, the link to
the server, and whether a reply is streaming. Each user intent is one method (a transition). After
each change it tells its listener with an event carrying an immutable snapshot; the app turns
events into Textual messages and the widgets redraw from the snapshots.

Every change bumps `generation`. The conversation is computed (rendered, fenced, counted) in one
worker thread; a result is applied only if no change came after it was asked for, so a stale
computation never overwrites a newer view.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping

from tui.context.errors import TemplateNotFound
from tui.context.messages import Message
from tui.context.request import RequestView
from tui.context.untrusted.visible import visible
from tui.context.templates.library import load_template, plain_chatml
from tui.sessions.model import Branch, Session
from tui.sessions.session_template import template_from_session

from tui.controller.capabilities import Capabilities
from tui.controller.compute import ComputeWorker, Skipped
from tui.controller.connecting import ConnectHooks, connect
from tui.controller.editing import Editing
from tui.controller.events import Event, ReplyEnded, ReplyStarted
from tui.controller.link import Link
from tui.controller.parts import Parts, Settings
from tui.controller.opening import OpenHooks, Opening
from tui.controller.runtime import Runtime
from tui.controller.reply_stream import STOPPED
from tui.controller.sending import NOT_SENT, SendHooks, Sending
from tui.controller.session_file import SessionFile
from tui.controller.recall import Recall
from tui.controller.slash import SlashIntents, SlashRunner, draft_of
from tui.controller.switching import Switches
from tui.controller.snapshot import ChatState, PaneState, Snapshot
from tui.controller.showing import Showing
from tui.controller.view_updates import ViewUpdates
from tui.controller.tokenizing import Tokenizing
from tui.controller.branches import branches_shown_from, kept_branches_notice
from tui.controller.history import History
from tui.controller.titling import session_changed
from tui.controller.tuning import Tuning
from tui.controller.tool_calls import ToolCalls, ToolHooks
from tui.controller.workbench import CharEstimate, Workbench
from tui.controller.events import CONTINUE_KEY, Severity, Tone

if TYPE_CHECKING:
    from tui.client.http import OpenAIClient
    from tui.context.tokens.tokenizers import Tokenizer

class Controller:
    def __init__(self, settings: Settings, runtime: Runtime, listener: Callable[[Event], None] = lambda event: None,
                 sessions_folder: Path | None = None) -> None:
        self.settings, self.runtime, self.listener = settings, runtime, listener
        self.link, self.worker = Link(settings), ComputeWorker()
        # What the transitions share and may reach (parts.py): not this controller.
        parts = self.parts = Parts(settings, runtime, self.link, self.worker, Workbench(Session(), plain_chatml()),
                                   self.emit)
        parts.on_change, parts.is_streaming = self.changed, lambda: self.sending.streaming
        self.file = parts.file = SessionFile(lambda: parts.wb.session, runtime, parts.notify, lambda: self.link.client,
                                             settings.api_key_env, sessions_folder)
        self.history = parts.history = History(parts)  # undo and redo (history.py)
        self.sending = Sending(parts, SendHooks(
            may_wait=lambda: self.tuning.may_wait(), wait_to_send=lambda text: self.tuning.wait_to_send(text),
            hold=lambda text: self.capabilities.hold(text), remember=lambda text: self.recall.remember(text),
            shown_again=self.shown_again, show_pane=self.show_pane, apply_view=self.apply_view,
            reply_started=self.reply_started, reply_ended=self.reply_ended))
        self.editing = Editing(parts, send=lambda: self.sending.start())
        self.opening = Opening(parts, OpenHooks(self.adopt, lambda: self.tuning.fresh_session(),
                                                lambda exact, rule: self.tuning.keep_server_template(exact, rule),
                                                self.answering, self.connect, lambda: self.sending.start()))
        self.tokenizing = Tokenizing(parts)
        # settings from the app, reconnecting, a send waiting for the link
        self.tuning = Tuning(parts, connect=lambda: self.connect(), start_send=lambda: self.sending.start())
        self.switches = Switches(parts, counting_said=self.tokenizing.say_how_counting_goes,
                                 what_if_said=lambda: self.tuning.say_what_if())  # F2-F5, the palette's
        self.slash = SlashRunner(parts, SlashIntents(
            self.answering, self.set_model, self.template_choices, self.set_template, self.set_policy,
            self.set_system_prompt, self.new_session, self.export_markdown, self.resend_from,
            lambda wb, dropped: self.sending.summary_call(wb, dropped)))  # the composer's /commands (slash.py)
        self.recall = Recall(parts)  # prompt history (recall.py)
        self.capabilities = Capabilities(parts, submit=lambda text: self.sending.submit(text, checked=True))
        self.showing = Showing(parts, what_if=lambda: self.tuning.what_if(), assumed=lambda: self.tuning.assumed())
        self.updates = ViewUpdates(parts, self.showing)  # the pane's computation, a stale one dropped
        self.tool_calls = ToolCalls(parts, ToolHooks(lambda: self.sending.start(), self.show_pane))

    # -- reading the state --------------------------------------------------------------------------
    @property
    def wb(self) -> Workbench:
        """The open session's workbench (kept in the parts the transitions share)."""
        return self.parts.wb

    @wb.setter
    def wb(self, wb: Workbench) -> None:
        self.parts.wb = wb

    @property
    def generation(self) -> int:
        return self.parts.generation

    @generation.setter
    def generation(self, generation: int) -> None:
        self.parts.generation = generation

    @property
    def notes(self) -> dict[str, str]:
        return self.parts.notes

    @notes.setter
    def notes(self, notes: dict[str, str]) -> None:
        self.parts.notes = notes

    @property
    def client(self) -> OpenAIClient | None:
        return self.link.client

    @property
    def streaming(self) -> bool:
        return self.sending.streaming

    @property
    def read_only(self) -> bool:
        return self.file.read_only

    def chat_state(self, figures: Mapping[str, str] | None = None) -> ChatState:
        return self.showing.chat_state(figures)

    def pane_state(self) -> PaneState | None:
        return self.showing.pane_state()

    def snapshot(self) -> Snapshot:
        session = self.wb.session
        return Snapshot(self.generation, self.chat_state(), self.pane_state(), self.wb.draft, self.streaming,
                        session.title, self.read_only, self.file.session_file, self.wb.template.name,
                        self.wb.tokenizer.name, self.wb.policy.name, session.model, self.link.url(session.base_url),
                        self.client is not None)

    def chat_figures(self) -> Mapping[str, str]:
        return self.showing.chat_figures()

    # -- telling the listener -------------------------------------------------------------------------
    def emit(self, event: Event) -> None:
        self.listener(event)

    def notify(self, text: str, *, severity: Severity = Severity.INFORMATION, title: str = "",
               timeout: float | None = None) -> None:
        self.parts.notify(text, severity=severity, title=title, timeout=timeout)

    def status(self, text: str, style: Tone = Tone.PLAIN) -> None:
        self.parts.status(text, style)

    def show_chat(self, figures: Mapping[str, str] | None = None) -> None:
        self.showing.show_chat(figures)

    def show_pane(self) -> None:
        self.showing.show_pane()

    # -- changes and the computation ------------------------------------------------------------------
    def changed(self, save: bool = True) -> None:
        """The state changed: a new generation, the chat shown again, the conversation computed again, and
        the file saved soon (unless `save` is false)."""
        self.shown_again()
        self.compute()
        if save and self.read_only:
            self.file.changed_unsaved()
        if save:
            self.file.autosave()

    def shown_again(self) -> None:
        """The state changed and the caller computes the request itself (a send): a new generation, the chat
        shown again; nothing computed, nothing saved."""
        self.generation += 1
        self.show_chat()

    def refresh(self) -> None:
        """The session was changed from outside the transitions (a script, a test): show and compute it again."""
        self.changed(save=False)

    def compute(self, delay: float = 0.0) -> None:
        """Compute the view of the current generation in the worker, now or after `delay` seconds."""
        self.updates.compute(delay)

    def apply_view(self, view: RequestView | Skipped, generation: int) -> bool:
        """Take a computed view if nothing changed since it was asked for; a stale one is dropped."""
        return self.updates.apply_view(view, generation)

    # -- the draft ----------------------------------------------------------------------------------
    def set_draft(self, text: str) -> None:
        """What the composer holds (a /command line too). The pane follows at once when the view can be spliced;
        else it is computed. The text is kept with the session, written at its next save (quit, switching)."""
        session = self.wb.session
        if text != session.draft:
            session.draft = text
            self.file.draft_typed()
        self.updates.set_draft(draft_of(text))

    # -- sending (the flow itself is in sending.py) ----------------------------------------------------
    def submit(self, text: str) -> bool:
        """Send the composer's text. True when it was taken (the composer may be cleared)."""
        return self.sending.submit(text)

    def stop(self) -> None:
        self.sending.stop()

    def resend_from(self, index: int, expected: Message | None = None) -> None:
        self.editing.resend_from(index, expected)

    # -- messages (editing.py: the history of changes is recorded there) --------------------------------
    def answering(self) -> bool:
        return self.editing.answering()

    def edit(self, index: int, text: str, expected: Message | None = None) -> None:
        self.editing.edit(index, text, expected)

    def delete(self, index: int, expected: Message | None = None) -> None:
        self.editing.delete(index, expected)

    def toggle_pin(self, index: int, expected: Message | None = None) -> None:
        self.editing.toggle_pin(index, expected)

    def system_prompt(self) -> str:
        return self.editing.system_prompt()

    def set_system_prompt(self, text: str) -> None:
        self.editing.set_system_prompt(text)

    def attach(self, text: str, label: str, key: str = "") -> None:
        """A pasted document, or the file named `file:PATH` (read off the loop: tui/controller/attaching.py);
        `key`: a later document with the same key supersedes this one (the curated policy)."""
        from tui.controller.attaching import Attaching
        Attaching(self.parts, self.editing).attach(text, label, key)

    # -- settings -----------------------------------------------------------------------------------
    def template_choices(self) -> list[tuple[str, str]]:
        return self.switches.template_choices()

    def set_template(self, choice: str) -> None:
        """A shipped template by name, or '@server': the server's own."""
        self.switches.set_template(choice)

    def set_policy(self, name: str) -> None:
        self.switches.set_policy(name)

    def set_model(self, name: str) -> None:
        self.switches.set_model(name)

    async def models(self) -> list[str] | None:
        """The server's models (None, and said why, when there are none to pick from)."""
        return await self.switches.models()

    def branches(self) -> list[tuple[int, Branch]]:
        """(place, branch) of each branch that forks from the conversation shown (branches.py)."""
        return branches_shown_from(self.wb.session)

    def show_branch(self, index: int) -> None:
        self.editing.show_branch(index)

    def toggle_fences(self) -> None:
        self.switches.toggle_fences()

    # -- the tokenizer (tokenizing.py) ---------------------------------------------------------------
    def load_tokenizer(self, name: str | None = None) -> None:
        self.tokenizing.load(name)

    def use_tokenizer(self, tokenizer: Tokenizer, exact: bool | None) -> None:
        self.tokenizing.use(tokenizer, exact)

    def tokenizer_source_changed(self, falling_back: bool) -> None:
        """Called from the counting worker when the server's tokenizer goes away or comes back."""
        self.runtime.soon(self.tokenizing.source_changed, falling_back)

    def retry_server_tokenizer(self) -> None:
        self.tokenizing.retry_server()

    # -- the server ---------------------------------------------------------------------------------
    def connect(self) -> None:
        hooks = ConnectHooks(lambda sample: self.adopt(sample, None, draft=self.wb.session.draft), self.tuning.offline,
                             self.use_tokenizer, self.tokenizer_source_changed,
                             ((self.sending.cache.connected, "cache"), (self.sending.load_prices, "prices")))
        self.tuning.connect(lambda: connect(self.parts, hooks))

    def trust_target(self) -> str:
        return self.link.trust_target(self.wb.session.base_url)

    def trust_endpoint(self, base: str) -> None:
        """The user agreed: the key goes to `base` from now on (connecting again to use it)."""
        self.link.trust(base)
        self.connect()

    # -- sessions -----------------------------------------------------------------------------------
    def adopt(self, session: Session, path: Path | None, read_only: bool = False, draft: str | None = None) -> None:
        """Work on this session from now on (kept in `path`, or in a new file once it has messages).

        The composer holds the session's own draft (what was left unsent in it). `draft`: what was typed while the
        file was read, which the composer holds already: it stays, after the session's own draft if it had one."""
        saved = session.draft
        typed = saved if draft is None else kept_draft(saved, draft)
        session.draft = typed
        self.file.open(path, read_only)
        if typed != saved:  # what was typed meanwhile: saved at quit like any text typed
            self.file.draft_typed()
        try:
            template = load_template(self.settings.template) if self.settings.template else \
                template_from_session(session.template)
        except (TemplateNotFound, OSError) as exc:
            self.notify(visible(str(exc)), severity=Severity.ERROR)
            template = plain_chatml()
        tokenizer = self.wb.tokenizer
        self.wb = Workbench(session, template, tokenizer, draft=draft_of(typed),
                            content_specials=self.wb.content_specials)
        # The cache boundary is read by the worker's next computation, not here; until the first tokenizer
        # has loaded it waits for it, so it is read once, with the right one.
        self.wb.tokenizer_pending = isinstance(tokenizer, CharEstimate) and not self.tokenizing.settled
        self.sending.cache.attach(self.wb)  # the server's cache outlives the session: predicted before any send
        self.tool_calls.attach(self.wb)  # the loaded tool file's definitions are sent, never the session's in their place
        self.notes = {}
        self.history.forget(from_file=path is not None and bool(session.messages))
        self.emit(session_changed(self.parts, draft=typed if draft != typed else None))  # (None: the composer has it)
        if session.branches:  # kept in the file, shown only by the palette: said once
            self.notify(kept_branches_notice(session))
        self.changed(save=False)

    async def open_first(self, path: Path | None, offline: bool) -> None:
        """At start-up: the file named, else the sample (offline) or an empty session. Read off the loop."""
        await self.opening.open_first(path, offline)

    def open_file(self, path: Path | None) -> None:
        self.opening.open_file(path)

    def new_session(self) -> None:
        self.opening.new_session()

    def rename_session(self, title: str) -> bool:
        from tui.controller.titling import rename
        return rename(self.parts, title)

    def continue_in_new_session(self) -> bool:
        """Fork: this session's history in a new file this app writes (from a read-only one: its way on)."""
        return self.opening.continue_in_new_session()

    def closing_line(self) -> str:
        """What to tell the user once the app has quit: where the session was saved, or why nothing was."""
        line = self.file.closing_line()
        if line and self.read_only and self.file.unsaved_here:
            line += "; the changes made here were not kept"
        if line and self.read_only and self.wb.draft.strip():
            line += f"; the {len(self.wb.draft):,} characters left unsent in the composer were not kept"
        return line

    def quit_would_lose(self) -> str:
        """What quitting now would lose, said before it does ("" when nothing): a read-only app keeps its draft
        nowhere (its file is another's to write)."""
        if not (self.read_only and (self.wb.draft.strip() or self.file.unsaved_here)):
            return ""
        return (f"not quit: what you typed or changed is kept nowhere once this app quits "
                f"({self.file.read_only_line()}). "
                f"{CONTINUE_KEY} continues in a new session that keeps it; quit again to leave without it")

    def resend_from_step(self, session: Session, step: int) -> bool:
        """A replayed step becomes a new session, sent again (the old session is kept). False if it cannot be."""
        return self.opening.resend_from_step(session, step)

    def export_markdown(self) -> None:
        self.runtime.spawn(self.opening.export_markdown, "export")

    def close(self) -> None:
        """The app is closing: save what must be saved, let the file go, stop the worker."""
        self.file.close(self.streaming)
        self.worker.close()

    # -- for the sending flow ----------------------------------------------------------------------------
    def reply_started(self) -> None:
        self.emit(ReplyStarted())

    def reply_ended(self, note: str) -> None:
        self.emit(ReplyEnded())
        if note:  # the error stays under the reply it cut short (or the question, if none came), and in the status
            self.status(note, Tone.CAUTION if note in (STOPPED, NOT_SENT) else Tone.BAD)  # stopped, or failed
            last = self.wb.session.messages[-1] if self.wb.session.messages else None
            if last is not None:
                self.notes[last.id] = note
        self.changed(save=False)
        self.tool_calls.arrived()


def kept_draft(saved: str, typed: str) -> str:
    """The composer's text when a session opens: its saved draft, and what was typed while it was read after it
    (neither is lost)."""
    if not saved or saved == typed:
        return typed
    return f"{saved}\n\n{typed}" if typed else saved
