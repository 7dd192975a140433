"""The send transition, from the composer's text to the reply kept, owned by the Controller.

The text becomes a user message; the request is computed in the controller's worker (never on the
event loop); the summarise policy makes its summary with one model call when it must; the reply
streams into the view and, every second, into the file. Stopped or failed, the user's message and
what arrived of the reply are kept, the reply marked incomplete, and the reason shown under it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from tui.client.errors import ClientError
from tui.context.errors import TemplateRenderError
from tui.context.request import RequestView
from tui.context.fit.usage_checks import checked_figure
from tui.context.untrusted.visible import visible

from tui.controller.reply_marks import mark_last_message, reply_mark
from tui.controller.caching import ServerCache, report_line
from tui.controller.receiving import check_before_sending, load_prices_once, receipt_note, say_receipt, settle_after
from tui.controller.reply_stream import stream_reply
from tui.controller.compute import Skipped
from tui.controller.session_file import CONTINUE_HINT
from tui.controller.titling import announce, name_if_untitled
from tui.controller.events import ReplyGrew, Severity, Tone

COUNT_WAIT = 10.0  # seconds a provider's pre-send count may take before the request goes without it

def unrecordable(wb: Any, body: dict[str, Any]) -> str | None:
    """Why the session file's reader would refuse this body as it is recorded (nested too deep, a figure too large),
    or None: a message read from a file may nest as deep as a message line allows, and a body wraps it further."""
    from tui.context.formats.convert import wire_request
    from tui.context.request_bytes import request_text
    from tui.sessions.session_log import body_text_problem

    return body_text_problem(request_text(wire_request(body, wb.api)).encode("utf-8"))


if TYPE_CHECKING:
    from tui.client.reply import Reply
    from tui.context.messages import Message
    from tui.context.pricing.prices import PriceTable
    from tui.sessions.model import RequestRecord

    from tui.controller.parts import Parts
    from tui.controller.runtime import Handle
    from tui.controller.workbench import Workbench

NOT_SENT = "■ stopped before it was sent: your message is kept"


@dataclass(frozen=True)
class Sent:
    """A request on its way: its record, the view and body it was sent as, when, and the prices it is costed at."""

    record: RequestRecord
    view: RequestView
    body: dict[str, Any]
    at: float
    prices: PriceTable


@dataclass(frozen=True)
class SendHooks:
    """What sending does beyond the parts, each a function of another transition."""

    may_wait: Callable[[], bool]  # a connection is on its way: a message sent now may wait for it
    wait_to_send: Callable[[str], bool]  # (the tuning's) keep the text, send it once connected
    hold: Callable[[str], bool]  # the capability warning holds this text back until the user says go
    remember: Callable[[str], None]  # the prompt history keeps what was sent
    shown_again: Callable[[], None]  # a new generation, the chat shown (the send computes the request itself)
    show_pane: Callable[[], None]
    apply_view: Callable[[RequestView, int], bool]  # the request's view, if nothing changed since
    reply_started: Callable[[], None]
    reply_ended: Callable[[str], None]  # with why it ended early ("" when it did not)


class Sending:
    def __init__(self, parts: Parts, hooks: SendHooks) -> None:
        self.parts, self.hooks = parts, hooks
        self.streaming = False  # one request at a time, from the submit until its reply ends
        self._job: Handle | None = None
        self._begun = False  # whether the running send has started (a job cancelled before never runs)
        self.prices: PriceTable | None = None  # the price table, read from files (off the loop) on the first send
        self.cache = ServerCache(parts)

    async def load_prices(self) -> None:
        """Read the price table once, when a server connects (a send before it is read reads it itself)."""
        self.prices = await load_prices_once(self.parts, self.prices)

    def submit(self, text: str, checked: bool = False) -> bool:
        """`checked`: the capability warning was seen and acted on (capabilities.py)."""
        parts = self.parts
        if self.streaming:
            parts.notify("a reply is still streaming: Esc stops it", severity=Severity.WARNING)
            return False
        if not text.strip():
            return False
        if parts.read_only:  # one writer per session: a reply here could never be kept
            parts.notify(f"not sent: {parts.file.read_only_line()}; your message stays in the composer. "
                         f"{CONTINUE_HINT}", severity=Severity.WARNING, timeout=15)
            return False
        if parts.client is None and self.hooks.may_wait():
            return self.hooks.wait_to_send(text)
        if parts.client is None:
            parts.notify("offline: start with --base-url URL to send; the pane shows what would be sent",
                       severity=Severity.WARNING)
            return False
        if not checked and self.hooks.hold(text):
            return False
        endpoint = parts.client.endpoint
        if endpoint.key_searchable and endpoint.secrets[0] in text:  # kept as written: the user's own words
            parts.notify(f"your message holds the key from ${endpoint.key_env}: it is sent to the model and kept in "
                       "the session as you wrote it (delete the message to remove it)", severity=Severity.WARNING,
                       title="Your API key is in your message")
        parts.wb.commit_text(text)
        self.hooks.remember(text)
        if name_if_untitled(parts.wb.session):
            announce(parts)
        self.hooks.shown_again()  # the request is computed by the send itself, below
        self.start()
        return True

    def start(self) -> None:
        """Send the conversation as it stands (its last message is the user's)."""
        if self.parts.read_only:  # (a retry, a re-send, a tool's answer: none is sent from a session held elsewhere)
            self.parts.notify(f"not sent: {self.parts.file.read_only_line()}. {CONTINUE_HINT}",
                              severity=Severity.WARNING, timeout=15)
            return
        self.streaming, self._begun = True, False
        self._job = self.parts.runtime.spawn(self._send, "reply")

    def stop(self) -> None:
        if self.streaming and self._job is not None:
            self._job.cancel()
            if not self._begun:  # cancelled before its first step: none of _send will run, so end it here
                self.streaming = False
                self.parts.status(NOT_SENT, Tone.CAUTION)
                self.parts.file.autosave()

    async def _send(self) -> None:
        self._begun = True
        parts = self.parts
        wb = parts.wb  # the session this request belongs to, even if another is opened meanwhile
        parts.file.autosave(now=True)  # the user's message is on disk, and the session has its file
        path = None if parts.read_only else parts.file.session_file

        def save() -> None:
            """This request's session to its own file, also when another session is open by now."""
            if parts.wb is wb:
                parts.file.save()
            elif path is not None:
                parts.file.save_to(wb.session, path)

        def progress(grew: ReplyGrew) -> None:
            if parts.wb is wb:  # another session is shown: the reply is not drawn into it
                parts.emit(grew)
        sent: Sent | None = None
        reply: Reply | None = None
        note = NOT_SENT
        try:
            self.cache.attach(wb)
            view = await self._prepare(wb)
            if view is not None and wb.summary_needed(view):
                view = await self._summarise(wb)
            if view is None:
                note = ""
                return
            body = wb.request_body(view)
            problem = unrecordable(wb, body)
            if problem:  # sent, it could not be kept: the file it is saved in would not open again
                parts.notify(visible(f"not sent: a session file could not hold this request ({problem})"),
                             severity=Severity.WARNING, timeout=12)
                return
            await self._provider_count(wb, body, view)
            sent_at = time.time()
            prices = self.prices = await load_prices_once(parts, self.prices)
            sent = Sent(wb.start_record(body, view), view, body, sent_at, prices)
            record = sent.record
            check_before_sending(parts, record, view, body)
            if parts.wb is wb:
                self.hooks.shown_again()
                self.hooks.show_pane()
                self.hooks.reply_started()
                parts.status(parts.link.status_line)  # a "stopped" or an error left by the last reply is stale now
            save()

            def checkpoint(progress: Reply) -> None:
                wb.update_record(record, progress)
                save()

            def say(text: str) -> None:
                if parts.wb is wb:
                    parts.status(text, Tone.CAUTION)
            client = parts.client
            if client is None:  # never: nothing drops the link while a reply is on its way (reconnecting waits)
                return
            reply, note = await stream_reply(client, body, progress, checkpoint, say)
        finally:
            self.streaming = False
            if sent is not None:
                record = sent.record
                if reply is None:  # an error nobody expected: what is on record stays, marked incomplete
                    from tui.client.reply import Reply
                    reply = Reply(content=record.reply.get("content", ""), incomplete=True)
                wb.finish_reply(record, reply)
                receipt = settle_after(parts, wb, record, sent.view, sent.body, reply, sent.prices)
                # held by the server, whatever is open
                cached = self.cache.after_reply(record, sent.view, reply, sent.at)
                save()
                if parts.wb is wb:
                    self.hooks.reply_ended(note)
                    mark_last_message(parts, reply_mark(reply))
                    if cached is not None and report_line(cached) and not receipt_note(receipt):
                        parts.status(report_line(cached), Tone.GOOD if cached.agrees else Tone.CAUTION)
                    say_receipt(parts, receipt)
            elif note and parts.wb is wb:
                parts.status(note, Tone.CAUTION)
                parts.file.autosave()

    async def _provider_count(self, wb: "Workbench", body: dict[str, Any], view: RequestView) -> None:
        """The provider's own count of this body, said beside ctxpane's before it is sent (when asked for)."""
        kind, parts = getattr(self.parts.settings, "provider_count", ""), self.parts
        if not kind or parts.client is None:
            return
        import asyncio

        from tui.client.provider_count import CountKind, ProviderCount, provider_count
        parts.status(f"asking {kind} for its count of the request…", Tone.CAUTION)
        try:  # the count is a courtesy: a slow count endpoint never holds the send for long
            counted = await asyncio.wait_for(provider_count(parts.client, CountKind(kind), body, view.sent_tokens,
                                                            view.snapshot.counts.exact), COUNT_WAIT)
        except TimeoutError:
            counted = ProviderCount(CountKind(kind), None, view.sent_tokens, view.snapshot.counts.exact,
                                    f"no answer in {COUNT_WAIT:g} s: sent without it")
        if parts.wb is wb:  # a notice: the status line is the reply's from here on
            severity = Severity.INFORMATION if counted.tokens is not None else Severity.WARNING
            parts.notify(visible(counted.line()), severity=severity, timeout=12)

    async def _prepare(self, wb: "Workbench") -> RequestView | None:
        """The request as it stands, computed in the worker (a template from outside may be slow)."""
        parts = self.parts
        generation = parts.generation
        try:
            view = await parts.worker.run(lambda: wb.compute(with_draft=False))
        except TemplateRenderError as exc:
            self._not_sent(wb, exc)
            return None
        if isinstance(view, Skipped):  # the app is closing: nothing is sent
            return None
        if generation == parts.generation and parts.wb is wb and not wb.draft:
            self.hooks.apply_view(view, generation)  # nothing typed meanwhile: it is also the pane's view
        return view

    def _not_sent(self, wb: "Workbench", exc: TemplateRenderError) -> None:
        self.parts.notify(f"not sent: template {wb.template.name} rejects the conversation: {exc}",
                          severity=Severity.ERROR, timeout=10)
        self.parts.file.autosave()

    async def _summarise(self, wb: "Workbench") -> RequestView | None:
        """The summarise policy: one model call, fitted to the window, makes the summary for the dropped turns.

        Made once per dropped range: if the summary's own room pushes one more message out, that one is
        left out unsummarised until a later send drops a new range (never a second call now)."""
        parts = self.parts
        try:
            view = await parts.worker.run(lambda: wb.compute(with_draft=False))
            if isinstance(view, Skipped):  # the app is closing: nothing is sent
                return None
            dropped = wb.summary_needed(view)
            if dropped:
                await self.summary_call(wb, dropped)
            view = await parts.worker.run(lambda: wb.compute(with_draft=False))
            return None if isinstance(view, Skipped) else view
        except TemplateRenderError as exc:
            self._not_sent(wb, exc)
            return None

    async def summary_call(self, wb: "Workbench", dropped: list[Message]) -> None:
        parts = self.parts
        call = await parts.worker.run(lambda: wb.summary_request(dropped))
        if isinstance(call, Skipped):  # the app is closing
            return
        if call.body is None:
            parts.status(f"could not summarise: {call.reason}: sending with the placeholder", Tone.BAD)
            return
        client = parts.client
        if client is None:  # (asked for only while connected)
            parts.status("could not summarise (offline): sending with the placeholder", Tone.BAD)
            return
        cut = " (turns cut to fit the window)" if call.cut else ""
        parts.status(f"summarising {len(dropped)} dropped messages with a model call{cut}…", Tone.CAUTION)
        try:
            sent_at = time.time()
            reply = await client.chat(call.body)
        except ClientError as exc:
            wb.summaries_asked.discard(frozenset(m.id for m in dropped))  # failed: a later send may ask again
            parts.status(f"could not summarise ({visible(str(exc))}): sending with the placeholder", Tone.BAD)
            return
        cost = checked_figure((reply.usage or {}).get("total_tokens")) or 0
        self.cache.after_summary(call.shape, reply, sent_at)
        before = parts.history.settings_before("policy")
        wb.set_summary(reply.content, cost, dropped)
        parts.history.settings_changed(f"summary of {len(dropped)} messages", before)
        parts.generation += 1  # the policy holds the summary now: views computed before are stale
        parts.status(f"summary made: {cost} tokens spent on it", Tone.CAUTION)
