"""Replay a session in the app: step through its requests with the pane as it was at each step."""

from __future__ import annotations

import asyncio
import threading

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message as TextualMessage
from textual.screen import Screen
from textual.widgets import Footer, Header, Static

from tui.context.cache.rules import shown_figure
from tui.context.errors import TemplateRenderError
from tui.context.messages import Message, message_from_dict
from tui.sessions.model import Session
from tui.sessions.receipts import cost_line, fit_line, received_line, request_series
from tui.context.formats import FormatKind
from tui.sessions.replay import Replayer, Step, record_wire

from tui.app.pane.pane import ContextPane, PaneData
from tui.app.chat.transcript import ChatView
from tui.app.shown import one_line, shown
from tui.app.pane.header import summary_text

SPEEDS = (1, 4, 16, 1000)


def drift_text(drift: dict) -> str:
    """What drifted since the step was sent: the template (where, when known) or the tokenizer's count."""
    stored, fresh = drift.get("stored"), drift.get("fresh")
    if drift.get("kind") == "tokenizer":
        return f"tokenizer drift: the same tokenizer counts {fresh} today (stored {stored})"
    if drift.get("line") is None:
        return f"template drift: no template at hand gives the stored document (stored {stored} · fresh {fresh})"
    return f"template drift at line {drift['line']}: stored {stored!r} · fresh {fresh!r}"


class ReplayScreen(Screen):
    READ_ONLY = True  # the app refuses and hides what would change the session while this is shown
    BINDINGS = [
        Binding("left,h", "step(-1)", "Previous", id="replay_prev"),
        Binding("right,l", "step(1)", "Next", id="replay_next"),
        Binding("home", "jump(0)", "First", show=False),
        Binding("end", "jump(-1)", "Last", show=False),
        Binding("space", "play", "Play reply", id="replay_play"),
        Binding("f", "faster", "Speed", id="replay_speed"),
        Binding("s", "resend", "Re-send from here", id="replay_resend"),
        Binding("escape,q", "close", "Close", id="replay_close"),
    ]
    DEFAULT_CSS = """
    ReplayScreen #replay-left { width: 1fr; }
    ReplayScreen #replay-info { height: auto; padding: 0 1; background: $panel; }
    ReplayScreen #replay-messages { height: 1fr; }
    """

    def __init__(self, session: Session, replayer: Replayer, roles: dict, start: int = 0) -> None:
        super().__init__()
        self.session, self.replayer, self.roles = session, replayer, roles
        self.index = max(0, min(start, len(replayer) - 1))
        self.speed = 0
        self.step_view: Step | None = None
        self._replaying = threading.Lock()

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal():
            with Vertical(id="replay-left"):
                yield Static(id="replay-info")
                yield ChatView(message_actions=False, id="replay-messages")  # read-only: no message keys
            yield ContextPane(id="replay-pane")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(ContextPane).set_roles(self.roles)
        self.show_step()

    def show_step(self) -> None:
        self._render_step(self.index)

    @work(thread=True, exclusive=True, group="replay-step")
    def _render_step(self, index: int) -> None:
        """The stored request is rendered off the event loop: its template came from a file."""
        try:  # a stored request from a file may be one this template or this version cannot render
            with self._replaying:  # one step at a time: a step the user left may still be rendering
                step = self.replayer.step(index)
                previous = self.replayer.stored_view(index - 1).shape if index else None
        except (ValueError, TemplateRenderError) as exc:
            self.app.call_from_thread(self._show_step, index, None, None, exc)
            return
        self.app.call_from_thread(self._show_step, index, step, previous, None)

    def _show_step(self, index: int, step: Step | None, previous, error: Exception | None) -> None:
        if index != self.index:  # the user stepped on meanwhile: that step is on its way
            return
        self.step_view = step
        if step is None:
            exc = error
            self.query_one("#replay-info", Static).update(
                shown(f"replay: step {self.index + 1} of {len(self.replayer)} cannot be shown: {exc}", "bold red"))
            chat = self.query_one("#replay-messages", ChatView)
            chat.end_reply()
            chat.show([])
            return
        record = step.record
        info = Text(f"replay: step {step.number} of {len(self.replayer)} · {one_line(record.time, 40)}\n", style="bold")
        if not record.document_hash:
            info.append("? not checked: this request was stored without a document hash", style="bold yellow")
        else:
            info.append("✓ the pane matches the stored request byte for byte" if step.matches else
                        "✗ the stored request renders differently now", style="green" if step.matches else "bold red")
        for note in step.notes:
            info.append("\n" + one_line(note, 300), style="yellow")
        info.append(f" (sha256 {one_line(record.document_hash[:12])}…)\n" if record.document_hash else "\n")
        if step.drift is None:
            info.append("no drift: a fresh rendering with today's template and tokenizer is identical\n", style="dim")
        else:
            info.append(one_line(drift_text(step.drift), 400) + "\n", style="yellow")
        info.append(f"reported cached {record.cached_reported if record.cached_reported is not None else '—'} · "
                    f"predicted {shown_figure(record.predicted_cached)}")
        if record.incomplete:
            info.append(" · reply incomplete", style="bold yellow")
        said = (fit_line(record.fit) + received_line(record.received)).removeprefix(" · ")
        if said:  # what the server did with it, as recorded when it was sent
            loud = (record.received or {}).get("verdict") in ("dropped", "added", "refused")
            for part in said.split(" · "):
                info.append("\n" + one_line(part, 400), style="bold red" if loud else "dim")
        if record.cost:
            info.append("\n" + one_line(cost_line(record.cost).removeprefix(" · "), 200))
        self.query_one("#replay-info", Static).update(info)
        chat = self.query_one("#replay-messages", ChatView)
        chat.end_reply()
        chat.show([self._stored_message(m, i) for i, m in enumerate(record_wire(self.session, record)[0])])
        self._show_reply(record.reply)
        data = PaneData(summary_text(step.view, self.session.policy_settings(), previous,
                                     prefix=f"step {step.number}: "),
                        list(self.session.messages), None, previous, self.session.policy_settings().context_window,
                        self.session.policy_settings().max_tokens, self.roles, self.session.requests[:self.index + 1],
                        self._costs(), (self.session.base_url or "") + FormatKind(record.format).path, record.body,
                        sent=record.sent, sent_base=self.session.base_url or "")
        self.query_one(ContextPane).show(step.view, data)

    def _costs(self) -> list[dict]:
        """The Cost tab's rows for the requests up to this step, as the chat computed them when they were sent."""
        return request_series(self.session.requests[:self.index + 1])

    @staticmethod
    def _stored_message(item: object, index: int) -> Message:
        try:
            return message_from_dict(item, index)
        except (ValueError, TypeError):  # shown as it was stored, as text
            return Message("user", str(item)[:10_000])

    def _show_reply(self, reply: dict, upto: int | None = None, note: str = "") -> None:
        """The stored reply after the request's messages, or its first `upto` characters while it plays."""
        content = reply.get("content") or ""
        chat = self.query_one("#replay-messages", ChatView)
        if not chat.has_reply:
            chat.begin_reply(streaming=False)
        chat.stream_update(content if upto is None else content[:upto], reply.get("reasoning") or "",
                           reply.get("tool_calls") or None, note)

    def action_step(self, delta: int) -> None:
        target = self.index + delta
        if 0 <= target < len(self.replayer):
            self.index = target
            self.show_step()

    def action_jump(self, where: int) -> None:
        self.index = 0 if where == 0 else len(self.replayer) - 1
        self.show_step()

    def action_faster(self) -> None:
        self.speed = (self.speed + 1) % len(SPEEDS)
        self.notify(f"playback speed ×{SPEEDS[self.speed]}", markup=False)

    @work(exclusive=True, group="playback")
    async def action_play(self) -> None:
        """Play the recorded reply at its recorded pace (tokens per second from its timings), or faster."""
        reply = self.step_view.record.reply if self.step_view else {}
        content = reply.get("content") or ""
        timings = (self.step_view.record.timings or {}) if self.step_view else {}
        chars_per_second = float(timings.get("predicted_per_second") or 30.0) * 4 * SPEEDS[self.speed]
        shown = 0
        while shown < len(content):
            shown = min(len(content), shown + max(1, int(chars_per_second / 30)))
            self._show_reply(reply, shown, "▶ playing")
            await asyncio.sleep(1 / 30)
        self._show_reply(reply)

    class Resend(TextualMessage):
        """The user asks to send this step again, as a new session."""

        def __init__(self, session: Session, step: int) -> None:
            super().__init__()
            self.session, self.step = session, step

    def action_resend(self) -> None:
        self.post_message(self.Resend(self.session, self.index + 1))

    def action_close(self) -> None:
        if len(self.app.screen_stack) > 2 or not getattr(self.app, "replay_only", False):
            self.app.pop_screen()
        else:
            self.app.exit()
