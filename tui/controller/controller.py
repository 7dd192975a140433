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
from types import MappingProxyType
from typing import TYPE_CHECKING, Callable, Mapping

from tui.context.errors import TemplateNotFound, TemplateRenderError
from tui.context.messages import Message
from tui.context.request import RequestView
from tui.context.untrusted.visible import visible
from tui.context.templates.library import load_template, plain_chatml
from tui.sessions.model import Branch, Session
from tui.sessions.session_template import template_from_session

from tui.controller.capabilities import Capabilities
from tui.controller.compute import ComputeWorker, Skipped
from tui.controller.connecting import connect
from tui.controller.editing import Editing
from tui.controller.events import (ChatChanged, Event, PaneChanged, ReplyEnded, ReplyStarted,
                     SessionChanged)
from tui.controller.link import Link
from tui.controller.parts import Parts, Settings
from tui.controller.message_facts import ReplyFactsCache
from tui.controller.opening import Opening
from tui.controller.receiving import fit_now
from tui.controller.runtime import Handle, Runtime
from tui.controller.reply_stream import STOPPED
from tui.controller.sending import NOT_SENT, Sending
from tui.controller.session_file import SessionFile
from tui.controller.recall import Recall
from tui.controller.slash import SlashRunner
from tui.controller import switching
from tui.controller.snapshot import ChatState, PaneState, Snapshot, frozen_notes
from tui.controller.tokenizing import Tokenizing
from tui.controller.branches import branches_shown_from, fork_notes, kept_branches_notice
from tui.controller.history import History
from tui.controller.tuning import Tuning
from tui.controller.workbench import CharEstimate, Workbench
from tui.controller.events import Severity, Tone

if TYPE_CHECKING:
    from tui.client.http import OpenAIClient
    from tui.context.templates.library import ChatTemplate
    from tui.context.tokens.tokenizers import Tokenizer

DRAFT_SETTLE = 0.4  # after a keystroke the pane was updated in place: the full computation waits this long
LARGE_DRAFT = 1 << 15  # characters: past this, typing never waits for the pane
LARGE_DRAFT_SETTLE = 0.1  # a big draft is computed (in the worker) once typing pauses this long


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
        self.sending = Sending(self)
        self.editing = Editing(parts, send=lambda: self.sending.start())
        self.opening = Opening(self)
        self.tokenizing = Tokenizing(parts)
        self.tuning = Tuning(self)  # settings from the app, reconnecting, a send waiting for the link
        self.slash = SlashRunner(self)  # the composer's /commands (slash.py)
        self.recall = Recall(parts)  # prompt history (recall.py)
        self.capabilities = Capabilities(parts, submit=lambda text: self.sending.submit(text, checked=True))
        self.reply_facts = ReplyFactsCache()  # the transcript's figures of each reply (message_facts.py)
        self._figures_shown: Mapping[str, str] | None = None  # the headers' lines the transcript shows now
        self._compute_timer: Handle | None = None
        self._compute_for = -1  # the generation a computation is on its way for
        self._template_said: str | None = None  # the template's refusal last said (said again only once it changes)
        # the template the worker has probed for splicing (tui/context/tokens/draft_splice.py)
        self._probed: ChatTemplate | None = None

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
        """`figures`: the headers' lines, when the caller has just computed them."""
        view = self.wb.view
        return ChatState(self.generation, tuple(self.wb.session.messages), frozenset(self._dropped()),
                         frozen_notes(self.notes), view.hidden.family if view is not None else "",
                         self.chat_figures() if figures is None else figures)

    def pane_state(self) -> PaneState | None:
        wb, view = self.wb, self.wb.view
        if view is None:
            return None
        session = wb.session
        from tui.context.formats import FormatKind
        from tui.context.formats.convert import wire_request
        body = wb.request_body(view)
        shown = wire_request(body, wb.api)  # the body as it is sent, in the endpoint's API
        return PaneState(self.generation, view, tuple(wb.messages_with_draft()),
                         len(session.messages) if wb.draft else None, wb.previous, wb.policy, tuple(session.requests),
                         tuple(wb.costs()), self.link.url(session.base_url) + FormatKind(wb.api).path,
                         shown, self.settings.api_key_env, self.read_only, self.tuning.what_if(),
                         fit_now(self.parts, view, body), self.tuning.assumed())

    def snapshot(self) -> Snapshot:
        session = self.wb.session
        return Snapshot(self.generation, self.chat_state(), self.pane_state(), self.wb.draft, self.streaming,
                        session.title, self.read_only, self.file.session_file, self.wb.template.name,
                        self.wb.tokenizer.name, self.wb.policy.name, session.model, self.link.url(session.base_url),
                        self.client is not None)

    def chat_figures(self) -> Mapping[str, str]:
        """Each message's header line: its figures, and a note where other versions of what follows are kept."""
        lines = dict(self.reply_facts.lines(self.wb.view, self.wb.session.requests))
        for ident, note in fork_notes(self.wb.session).items():
            lines[ident] = f"{lines[ident]} · {note}" if lines.get(ident) else note
        return MappingProxyType(lines)

    def _dropped(self) -> set[int]:
        return {e.message for e in self.wb.view.ledger} if self.wb.view else set()

    # -- telling the listener -------------------------------------------------------------------------
    def emit(self, event: Event) -> None:
        self.listener(event)

    def notify(self, text: str, *, severity: Severity = Severity.INFORMATION, title: str = "",
               timeout: float | None = None) -> None:
        self.parts.notify(text, severity=severity, title=title, timeout=timeout)

    def status(self, text: str, style: Tone = Tone.PLAIN) -> None:
        self.parts.status(text, style)

    def show_chat(self, figures: Mapping[str, str] | None = None) -> None:
        chat = self.chat_state(figures)
        self._figures_shown = chat.figures
        self.emit(ChatChanged(chat))

    def show_pane(self) -> None:
        pane = self.pane_state()
        if pane is not None:
            self.emit(PaneChanged(pane))

    # -- changes and the computation ------------------------------------------------------------------
    def changed(self, save: bool = True) -> None:
        """The state changed: a new generation, the chat shown again, the conversation computed again, and
        the file saved soon (unless `save` is false)."""
        self.shown_again()
        self.compute()
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
        if self._compute_timer is not None:
            self._compute_timer.cancel()
            self._compute_timer = None
        self._compute_for = self.generation
        if delay:
            self._compute_timer = self.runtime.later(delay, self._start_compute)
        else:
            self._start_compute()

    def _start_compute(self) -> None:
        self._compute_timer = None
        generation = self.generation
        self.runtime.spawn(lambda: self._compute_view(generation), "compute")

    async def _compute_view(self, generation: int) -> None:
        wb = self.wb

        def job() -> RequestView:
            view = wb.compute()
            wb.template.copies_text_verbatim()  # probed here: a keystroke never renders a template on the loop
            return view
        try:
            view = await self.worker.run(job, lambda: generation == self.generation)
        except TemplateRenderError as exc:  # the template refuses this conversation: say so, keep going
            if generation == self.generation:
                self._template_failed(exc)
            return
        if not isinstance(view, Skipped):
            self._probed = wb.template
        self.apply_view(view, generation)

    def apply_view(self, view: RequestView | Skipped, generation: int) -> bool:
        """Take a computed view if nothing changed since it was asked for; a stale one is dropped."""
        if isinstance(view, Skipped) or generation != self.generation:
            if self._compute_for != self.generation and self._compute_timer is None:
                self.compute(0.05)  # a change that asked for no computation of its own: compute it now
            return False
        dropped_before = self._dropped()
        self.wb.view = view
        self._template_said = None  # the template takes the conversation again: a later refusal is said
        figures = self.chat_figures()  # the new view's counts: shown again only if a header changes
        if self._dropped() != dropped_before or figures != self._figures_shown:
            self.show_chat(figures)
        self.show_pane()
        return True

    def _template_failed(self, exc: TemplateRenderError) -> None:
        said = f"template {self.wb.template.name} rejects the conversation: {exc}"
        if said != self._template_said:  # said once, not again on every keystroke while it keeps refusing
            self._template_said = said
            self.notify(said, severity=Severity.ERROR, timeout=10)
        self.wb.view = None
        self.show_chat()

    # -- the draft ----------------------------------------------------------------------------------
    def set_draft(self, text: str) -> None:
        """What the composer holds. The pane follows at once when the view can be spliced; else it is computed."""
        if text == self.wb.draft:
            return
        self.generation += 1
        if len(text) > LARGE_DRAFT or len(self.wb.draft) > LARGE_DRAFT:
            # The key is echoed now; the pane follows once typing pauses, computed in the worker, where
            # only the changed piece of the draft is encoded again (SegmentCache).
            self.wb.draft = text
            self.compute(LARGE_DRAFT_SETTLE)
        elif self._probed is not self.wb.template:  # not known yet whether it may be spliced: compute in full
            self.wb.draft = text
            self.compute()
        elif self.wb.set_draft(text):
            self.show_pane()
            self.compute(DRAFT_SETTLE)  # the policy may move with the draft: settle after a pause
        else:
            self.compute()

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

    def attach(self, text: str, label: str) -> None:
        """A pasted document, or the file named `file:PATH` (read off the loop: tui/controller/attaching.py)."""
        from tui.controller.attaching import Attaching
        Attaching(self.parts, self.editing).attach(text, label)

    # -- settings -----------------------------------------------------------------------------------
    def template_choices(self) -> list[tuple[str, str]]:
        return switching.template_choices(self)

    def set_template(self, choice: str) -> None:
        """A shipped template by name, or '@server': the server's own."""
        switching.set_template(self, choice)

    def set_policy(self, name: str) -> None:
        switching.set_policy(self, name)

    def set_model(self, name: str) -> None:
        switching.set_model(self, name)

    async def models(self) -> list[str] | None:
        """The server's models (None, and said why, when there are none to pick from)."""
        return await switching.models(self)

    def branches(self) -> list[tuple[int, Branch]]:
        """(place, branch) of each branch that forks from the conversation shown (branches.py)."""
        return branches_shown_from(self.wb.session)

    def show_branch(self, index: int) -> None:
        self.editing.show_branch(index)

    def toggle_fences(self) -> None:
        switching.toggle_fences(self)

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
        self.tuning.connect(lambda: connect(self))

    def trust_target(self) -> str:
        return self.link.trust_target(self.wb.session.base_url)

    def trust_endpoint(self, base: str) -> None:
        """The user agreed: the key goes to `base` from now on (connecting again to use it)."""
        self.link.trust(base)
        self.connect()

    # -- sessions -----------------------------------------------------------------------------------
    def adopt(self, session: Session, path: Path | None, read_only: bool = False, draft: str = "") -> None:
        """Work on this session from now on (kept in `path`, or in a new file once it has messages).

        `draft`: what the composer holds from now on (what was typed while the file was read)."""
        self.file.open(path, read_only)
        try:
            template = load_template(self.settings.template) if self.settings.template else \
                template_from_session(session.template)
        except (TemplateNotFound, OSError) as exc:
            self.notify(visible(str(exc)), severity=Severity.ERROR)
            template = plain_chatml()
        tokenizer = self.wb.tokenizer
        self.wb = Workbench(session, template, tokenizer, draft=draft, content_specials=self.wb.content_specials)
        # The cache boundary is read by the worker's next computation, not here; until the first tokenizer
        # has loaded it waits for it, so it is read once, with the right one.
        self.wb.tokenizer_pending = isinstance(tokenizer, CharEstimate) and not self.tokenizing.settled
        self.sending.cache.attach(self.wb)  # the server's cache outlives the session: predicted before any send
        self.notes = {}
        self.history.forget()
        self.emit(SessionChanged(session.title, self.read_only, self.file.session_file))
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
