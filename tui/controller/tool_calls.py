"""Tools in the chat: the tool file loaded, the calls a reply leaves waiting, the isolated review of a risky
call, and each call's answer (by hand, by the user's command, or a refusal), sent back as an untrusted tool
result. When the last waiting call is answered, the conversation is sent again.

The gate is here, not in the view: a risky call's command runs only after its review has ended, and a
deny (or a review that failed: it fails closed) only with the user's explicit override."""

from __future__ import annotations

import hashlib
import json
import shlex
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from tui.client.errors import ClientError
from tui.context.tools.calls import (PendingCall, Resolution, arguments_problem, pending_calls, result_message,
                                     unreadable_text)
from tui.context.tools.definitions import ToolSet, described_differently
from tui.context.tools.review import ReviewRequest, Verdict, parse_verdict, verdict_text
from tui.context.untrusted.visible import visible
from tui.controller.compute import Skipped
from tui.controller.events import Severity, Tone, ToolCallsWaiting, WaitReason

if TYPE_CHECKING:
    from tui.client.http import OpenAIClient
    from tui.controller.parts import Parts
    from tui.controller.workbench import Workbench


REVIEWS_AT_ONCE = 4  # reviews a reply's calls start at once: a reply of 128 calls does not make 128 requests


class ReviewState(StrEnum):
    REVIEWING = "reviewing"
    DONE = "done"
    FAILED = "failed"  # no verdict came (offline, an error): counted as deny


@dataclass(frozen=True)
class Review:
    call: PendingCall
    state: ReviewState
    request: ReviewRequest | None = None
    reply: str = ""  # the reviewer's reply as it came
    verdict: Verdict | None = None
    command: tuple[str, ...] = ()  # the command the call would run when it was reviewed
    model: str = ""  # the model that reviewed it (asked of the reviewer's endpoint)

    @property
    def reviewer(self) -> str:
        """Who judges: the model named wherever the verdict is shown."""
        return self.model or (self.request.model if self.request else "") or "?"

    @property
    def line(self) -> str:
        if self.state is ReviewState.REVIEWING:
            return "reviewing…"
        return self.verdict.line() if self.verdict else "no verdict: counted as deny"

    @property
    def allows(self) -> bool:
        return self.state is ReviewState.DONE and self.verdict is not None and self.verdict.allows


@dataclass(frozen=True)
class CallFacts:
    """What the dialog for one waiting call shows: all of it decided here, none of it in the view."""

    call: PendingCall
    place: int  # 1-based, of `waiting`
    waiting: int
    standing: str  # risky, not risky, or not defined by the loaded file
    command: tuple[str, ...]
    review: str  # the reviewer's verdict line, "reviewing…", or "" when the call is not reviewed
    reviewer: str  # the model that reviewed it ("" when the call is not reviewed)
    review_state: ReviewState | None  # None: not reviewed
    allowed: bool  # the review ended with an allow
    rationale: str
    run_blocked: str  # why the command may not run now ("" when it may)
    override_helps: bool  # the reviewer's deny is all that stops it: an explicit override runs it


def review_key(call: PendingCall) -> str:
    """A review is of this call exactly: its message, place, id, name and arguments (any change: a new review)."""
    digest = hashlib.sha256(json.dumps([call.name, call.arguments]).encode()).hexdigest()[:16]
    return f"{call.message_id}/{call.index}/{call.id}/{digest}"


@dataclass
class Reviewer:
    """Where a review is sent: the client (None: offline), the model asked, and the server's kind ("" unknown)."""

    client: OpenAIClient | None
    model: str
    server_kind: str
    owned: bool = False  # a client of its own (a separate reviewer endpoint): closed once the review ends

    async def close(self) -> None:
        if self.owned and self.client is not None:
            await self.client.aclose()


@dataclass(frozen=True)
class ToolHooks:
    start_send: Callable[[], None]
    show_pane: Callable[[], None]


class ToolCalls:
    def __init__(self, parts: Parts, hooks: ToolHooks) -> None:
        self.parts, self.hooks = parts, hooks
        self.tools = ToolSet()
        self.running: set[str] = set()  # review_key of each call whose command is running
        self.ran: set[str] = set()  # review_key of each call whose command ran (a delete may bring the call back)
        self.reviewer_kinds: dict[str, str] = {}  # a reviewer endpoint of its own: the server kind it answered

    # -- the tool file ------------------------------------------------------------------------------
    def load(self, path: Path) -> bool:
        from tui.sessions.tool_file import ToolFileError, read_tool_file
        try:
            tools = read_tool_file(path)
        except ToolFileError as exc:
            self.parts.notify(visible(str(exc)), severity=Severity.ERROR, title="Tools not loaded")
            return False
        self.use(tools)
        return True

    def use(self, tools: ToolSet) -> None:
        self.tools = tools
        self.parts.notify(visible(f"loaded {tools.summary()}: the model is sent their definitions"),
                          title="Tools loaded")
        self.attach(self.parts.wb)
        self.parts.changed()

    def attach(self, wb: Workbench) -> None:
        """The session in `wb` is sent the loaded tool file's definitions from now on. A session that stores none
        (a new one) stores them; one that stores its own keeps them in its file as they were (nothing is lost),
        and the user is told once which of them differ: those are not sent."""
        wb.loaded_tools = self.tools
        if not self.tools.specs:
            return
        if not wb.session.tools or wb.tools_from_loaded_file:
            wb.session.tools, wb.tools_from_loaded_file = self.tools.wire(), True
            return
        differing = described_differently(self.tools, wb.session.tools)
        if differing:
            names = ", ".join(differing)
            if len(names) > 120:
                names = names[:119] + "…"
            which = "definition is" if len(differing) == 1 else "definitions are"
            self.parts.notify(visible(f"this session's file describes {names} differently; the loaded tool file's "
                                      f"{which} sent"), severity=Severity.WARNING, title="Loaded tools win")

    # -- the waiting calls ----------------------------------------------------------------------------
    def pending(self) -> list[PendingCall]:
        return pending_calls(self.parts.wb.session.messages)

    def review_of(self, call: PendingCall) -> Review | None:
        return self.parts.wb.reviews.get(review_key(call))

    def arrived(self) -> None:
        """A reply ended: its tool calls wait for the user; the risky ones are reviewed meanwhile."""
        waiting = self._refuse_unreadable(self.pending())
        if not waiting:
            return
        for call in [c for c in waiting if self.reviewed(c.name)][:REVIEWS_AT_ONCE]:
            if self.review_of(call) is None:  # the rest are reviewed when their dialog opens (gate)
                self.review(call)
        names = ", ".join(visible(call.name or "unnamed") for call in waiting)
        self.parts.status(f"the model calls {names}: answer, run or refuse (palette: Answer tool calls)", Tone.CAUTION)
        if self.parts.wb.tools_sent():  # a call to tools never offered is the server's noise: said, not asked
            self.parts.emit(ToolCallsWaiting(len(waiting), WaitReason.ARRIVED))

    def _refuse_unreadable(self, waiting: list[PendingCall]) -> list[PendingCall]:
        """Calls whose arguments read two ways are refused as they arrive, before any review: the rest wait."""
        for call in waiting:
            problem = arguments_problem(call.arguments)
            if problem:
                self._resolve(self.parts.wb, call, unreadable_text(problem), Resolution.UNREADABLE, send=False)
        return self.pending()

    def reviewed(self, name: str) -> bool:
        """Whether a call to `name` gets the isolated review: a risky tool with a command to run. A tool with no
        command (one no loaded file defines, too) can only be answered by hand or refused: nothing to gate."""
        spec = self.tools.spec(name)
        return spec.risky and bool(spec.command)

    def review(self, call: PendingCall) -> None:
        if arguments_problem(call.arguments):  # the reviewer would judge one reading, the command get another
            return
        wb = self.parts.wb
        wb.reviews[review_key(call)] = Review(call, ReviewState.REVIEWING, command=self.tools.spec(call.name).command)
        self.parts.runtime.spawn(lambda: self._review(wb, call), f"review:{review_key(call)}")

    async def _review(self, wb: Workbench, call: PendingCall) -> None:
        parts, key = self.parts, review_key(call)
        reviewer = self.reviewer()
        try:
            reviewer.server_kind = await self._server_kind(reviewer)
            request = await parts.worker.run(lambda: self._review_request(wb, call, reviewer))
            if isinstance(request, Skipped):
                return
            started = wb.reviews[key] = replace(wb.reviews[key], request=request, model=request.model)
            self._shown(wb)
            wb.reviews[key] = await self._verdict(started, request, call, reviewer, self._secrets(reviewer))
        finally:
            await reviewer.close()
        self._shown(wb)
        review = wb.reviews[key]
        if parts.wb is wb:
            parts.status(visible(f"review of {call.name}: {review.line}"),
                         Tone.GOOD if review.allows else Tone.BAD)
            parts.emit(ToolCallsWaiting(len(self.pending()), WaitReason.REVIEWED))

    def _secrets(self, reviewer: Reviewer) -> set[str]:
        """The keys a reply must not show: those this process holds, the chat's and the reviewer's endpoint's."""
        from tui.controller.tool_runner import secrets_of_environment
        client = self.parts.client
        return {*secrets_of_environment(self.parts.settings.api_key_env),
                *(client.endpoint.secrets if client else ()),
                *(reviewer.client.endpoint.secrets if reviewer.client is not None else ())}

    @staticmethod
    async def _verdict(started: Review, request: ReviewRequest, call: PendingCall, reviewer: Reviewer,
                       secrets: set[str]) -> Review:
        """The reviewer's answer read where its API puts the verdict; no answer, or any error, is no verdict. A key
        the endpoint wrote back (in its rationale, its reply or its error) is masked, as a command's output is."""
        from tui.context.untrusted.redaction import known_secrets_masked
        if reviewer.client is None:
            return replace(started, state=ReviewState.FAILED, reply="offline: no review was made")
        try:
            reply = await reviewer.client.chat(request.body, api=request.api)
        except ClientError as exc:
            return replace(started, state=ReviewState.FAILED,
                           reply=known_secrets_masked(f"the review failed: {exc}", secrets))
        text = verdict_text(reply.content, reply.tool_calls)
        verdict = parse_verdict(text, call)  # read as it came; only what is shown is masked
        verdict = replace(verdict, rationale=known_secrets_masked(verdict.rationale, secrets))
        return replace(started, state=ReviewState.DONE, reply=known_secrets_masked(text, secrets), verdict=verdict)

    async def _server_kind(self, reviewer: Reviewer) -> str:
        """A reviewer endpoint of its own is asked once what server it is, where that decides how the verdict's
        schema is carried (reviewer_api: llama.cpp's Messages API holds no forced tool to a schema)."""
        client = reviewer.client
        if reviewer.server_kind or client is None or not reviewer.owned or client.endpoint.api == "chat":
            return reviewer.server_kind
        base = client.endpoint.base_url
        if base not in self.reviewer_kinds:
            from tui.client.server_info import probe
            try:
                self.reviewer_kinds[base] = (await probe(client, reviewer.model)).kind
            except ClientError:
                return ""  # asked again at the next review
        return self.reviewer_kinds[base]

    def reviewer(self) -> Reviewer:
        """The reviewer's own endpoint and model when settings name them (config.toml `review_base_url`,
        `review_model`); else the chat's own. Its key is the chat's key variable, sent only where the user pointed."""
        settings, link = self.parts.settings, self.parts.link
        base = getattr(settings, "review_base_url", "") or ""
        model = getattr(settings, "review_model", "") or ""
        if not base:
            connection = link.connection
            kind = connection.info.kind if connection is not None and link.client is not None else ""
            return Reviewer(link.client, model or self.parts.wb.session.model, kind)
        from tui.client.endpoint import EndpointError
        from tui.client.http import OpenAIClient
        try:
            endpoint = link.endpoint_for(base, "config", model)
        except EndpointError:
            return Reviewer(None, model, "")
        endpoint.model = model or endpoint.model
        return Reviewer(OpenAIClient(endpoint), endpoint.model, "", owned=True)

    def _review_request(self, wb: Workbench, call: PendingCall, reviewer: Reviewer) -> ReviewRequest:
        from tui.context.request_fences import fence_escapes
        from tui.context.tools.review import review_request
        api = reviewer.client.endpoint.api if reviewer.client is not None else "chat"
        return review_request(wb.session.messages, call, wb.template, wb.tokenizer, reviewer.model,
                              fence_escapes(wb.template, wb.tokenizer), self.tools.spec(call.name), api,
                              reviewer.server_kind)

    def _shown(self, wb: Workbench) -> None:
        if self.parts.wb is wb:
            self.hooks.show_pane()

    def facts(self, call: PendingCall) -> CallFacts:
        waiting, spec = self.pending(), self.tools.spec(call.name)
        place = next((n for n, c in enumerate(waiting, 1) if c == call), 0)
        standing = ("not defined by the loaded tool file: no command can run it" if not spec.known else
                    "risky: the isolated reviewer judges it before it may run" if spec.risky else "not marked risky")
        review, problem = self.review_of(call), arguments_problem(call.arguments)
        blocked = self.gate(call)
        rationale = review.verdict.rationale if review and review.verdict else (review.reply if review else "")
        line = f"not asked: {problem}" if problem else review.line if review else ""
        return CallFacts(call, place, len(waiting), standing, spec.command, line, review.reviewer if review else "",
                         review.state if review else None, bool(review and review.allows), rationale, blocked,
                         bool(blocked) and not self.gate(call, override=True))

    # -- answering a call --------------------------------------------------------------------------------
    def gate(self, call: PendingCall, override: bool = False) -> str:
        """Why the call's command may not run now ("" when it may)."""
        spec = self.tools.spec(call.name)
        problem = arguments_problem(call.arguments)
        if problem:  # before anything else: no override runs a call whose arguments read two ways
            return f"refused before review: {problem}"
        if self.parts.read_only:
            return "the session is read-only"
        if not spec.command:
            return f"{call.name or 'this tool'} has no command set in the loaded tool file: answer by hand or refuse"
        key = review_key(call)
        if key in self.running:
            return "its command is running"
        if call not in self.pending():
            return "it is answered already"
        if not call.complete:
            return "the reply was cut short: its arguments may be cut too (answer by hand or refuse)"
        if self._earlier_under_its_id(call):
            return "an earlier call under the same id waits: answer that one first"
        if key in self.ran and not override:
            return "its command ran already (its result was deleted): run it again only with an explicit override"
        if not spec.risky:
            return ""
        review = self.review_of(call)
        if review is not None and review.command != spec.command:
            review = None  # the tool file was loaded again with another command: that one was not reviewed
        if review is None or review.state is ReviewState.REVIEWING:
            if review is None:
                self.review(call)  # (a session opened with the call waiting, a new command): reviewed now
            return "the reviewer has not given its verdict yet"
        if not review.allows and not override:
            return "the reviewer denied it: run it only with an explicit override"
        return ""

    def _earlier_under_its_id(self, call: PendingCall) -> bool:
        """Tool results answer calls under one id in order: a later one answered first would answer the earlier."""
        return any(other.id == call.id and other.index < call.index for other in self.pending())

    def answer(self, call: PendingCall, text: str) -> None:
        self._resolve(self.parts.wb, call, text, Resolution.ANSWERED)

    def refuse(self, call: PendingCall) -> None:
        problem = arguments_problem(call.arguments)
        if problem:  # (a session opened with it waiting): the model is told why, not only that
            self._resolve(self.parts.wb, call, unreadable_text(problem), Resolution.UNREADABLE)
        else:
            self._resolve(self.parts.wb, call, "", Resolution.REFUSED)

    def run(self, call: PendingCall, override: bool = False) -> bool:
        problem = self.gate(call, override)
        if problem:
            self.parts.notify(visible(problem), severity=Severity.WARNING)
            return False
        self.running.add(review_key(call))
        wb, path = self.parts.wb, self.parts.file.session_file
        self.parts.runtime.spawn(lambda: self._run(wb, call, path), f"tool:{review_key(call)}")
        return True

    async def _run(self, wb: Workbench, call: PendingCall, path: Path | None = None) -> None:
        from tui.controller.tool_runner import run_tool, secrets_of_environment
        parts, argv = self.parts, self.tools.spec(call.name).command
        parts.status(visible(f"running {call.name}: {shlex.join(argv)}"), Tone.CAUTION)
        client = parts.client
        secrets = {*secrets_of_environment(parts.settings.api_key_env), *(client.endpoint.secrets if client else ())}
        try:
            done = await run_tool(argv, call.arguments, parts.settings.api_key_env, secrets)
        finally:
            self.running.discard(review_key(call))
        self.ran.add(review_key(call))
        if parts.wb is not wb and path is not None and parts.file.session_file == path:
            wb = parts.wb  # the same file opened again: the call waits in the session shown now
        elif parts.wb is not wb and path is not None and call in pending_calls(wb.session.messages):
            self._elsewhere(wb, call, done.result_text(), path)  # it ran: its output is kept, in its own session
            return
        self._resolve(wb, call, done.result_text(), Resolution.RAN)

    def _elsewhere(self, wb: Workbench, call: PendingCall, text: str, path: Path) -> None:
        """The command ended after another session was opened: its result goes to its own session's file."""
        wb.session.messages.append(result_message(call, text, Resolution.RAN, wb.new_id()))
        self.parts.file.save_to(wb.session, path)
        self.parts.notify(visible(f"{call.name} ended after another session was opened: its result is saved in "
                                  f"{path.name}"), severity=Severity.WARNING)

    def _resolve(self, wb: Workbench, call: PendingCall, text: str, resolution: Resolution, send: bool = True) -> None:
        """`send`: send the results once no call waits. An automatic refusal does not: a model that kept writing
        unreadable calls would otherwise be asked again and again with no one at the keyboard."""
        parts = self.parts
        if resolution is not Resolution.RAN and review_key(call) in self.running:
            parts.notify(f"{visible(call.name)}: its command is running: its output will be the answer",
                         severity=Severity.WARNING)
            return
        if parts.streaming or parts.read_only or parts.wb is not wb or call not in pending_calls(wb.session.messages) \
                or self._earlier_under_its_id(call):
            parts.notify(f"{visible(call.name)}: not answered (the conversation changed meanwhile)",
                         severity=Severity.WARNING)
            return
        message = result_message(call, text, resolution, wb.new_id())
        wb.session.messages.append(message)  # like a reply, not an undo step: undo never unanswers a call
        left = pending_calls(wb.session.messages)
        said = (f"; {len(left)} call(s) still wait" if left else ": sending the results" if send else
                ": write to go on (the refusal is sent with your next message)")
        parts.status(visible(f"{call.name}: {resolution.value}{said}"), Tone.PLAIN)
        if resolution is Resolution.UNREADABLE:
            parts.notify(visible(f"{call.name or 'unnamed'}: {text}"), severity=Severity.WARNING)
        parts.changed()
        if left:
            parts.emit(ToolCallsWaiting(len(left), WaitReason.ANSWERED))
        elif send:
            self.hooks.start_send()
