"""What the views are told: the chat and the pane pictured from the open session (snapshot.py's states) and
sent to the listener. It reads the parts and changes nothing but what it last showed."""

from __future__ import annotations

from types import MappingProxyType
from typing import Callable, Mapping

from tui.context.formats import FormatKind
from tui.context.formats.convert import wire_request

from tui.controller.branches import fork_notes
from tui.controller.events import ChatChanged, PaneChanged
from tui.controller.message_facts import ReplyFactsCache
from tui.controller.parts import Parts
from tui.controller.receiving import fit_now
from tui.controller.snapshot import ChatState, PaneState, frozen_notes


class Showing:
    """`what_if` and `assumed`: the tuning's notes on the template (a pick the server overrides, one assumed)."""

    def __init__(self, parts: Parts, what_if: Callable[[], str], assumed: Callable[[], str]) -> None:
        self.parts, self._what_if, self._assumed = parts, what_if, assumed
        self.reply_facts = ReplyFactsCache()  # the transcript's figures of each reply (message_facts.py)
        self.figures_shown: Mapping[str, str] | None = None  # the headers' lines the transcript shows now

    def chat_state(self, figures: Mapping[str, str] | None = None) -> ChatState:
        """`figures`: the headers' lines, when the caller has just computed them."""
        parts, view = self.parts, self.parts.wb.view
        return ChatState(parts.generation, tuple(parts.wb.session.messages), frozenset(self.dropped()),
                         frozen_notes(parts.notes), view.hidden.family if view is not None else "",
                         self.chat_figures() if figures is None else figures)

    def pane_state(self) -> PaneState | None:
        parts, wb = self.parts, self.parts.wb
        view = wb.view
        if view is None:
            return None
        session = wb.session
        body = wb.request_body(view)
        shown = wire_request(body, wb.api)  # the body as it is sent, in the endpoint's API
        return PaneState(parts.generation, view, tuple(wb.messages_with_draft()),
                         len(session.messages) if wb.draft else None, wb.previous, wb.policy, tuple(session.requests),
                         tuple(wb.costs()), parts.link.url(session.base_url) + FormatKind(wb.api).path,
                         shown, parts.settings.api_key_env, parts.read_only, self._what_if(),
                         fit_now(parts, view, body), self._assumed(), tuple(wb.reviews.values()))

    def chat_figures(self) -> Mapping[str, str]:
        """Each message's header line: its figures, and a note where other versions of what follows are kept."""
        wb = self.parts.wb
        lines = dict(self.reply_facts.lines(wb.view, wb.session.requests))
        for ident, note in fork_notes(wb.session).items():
            lines[ident] = f"{lines[ident]} · {note}" if lines.get(ident) else note
        return MappingProxyType(lines)

    def dropped(self) -> set[int]:
        view = self.parts.wb.view
        return {e.message for e in view.ledger} if view else set()

    def show_chat(self, figures: Mapping[str, str] | None = None) -> None:
        chat = self.chat_state(figures)
        self.figures_shown = chat.figures
        self.parts.emit(ChatChanged(chat))

    def show_pane(self) -> None:
        pane = self.pane_state()
        if pane is not None:
            self.parts.emit(PaneChanged(pane))
