"""The model of the server's prompt cache, held for the connection: what llama.cpp keeps in its slots and
its host-memory cache, so each request is predicted against every prompt the server may still hold.

Built when a llama.cpp server connects, from its /props and /slots (and, when the open session already has
requests, by replaying them); advanced after each reply with the prompt as the server computed it. The
workbench predicts against a copy, in the worker, so the model itself only changes on the event loop.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

from tui.client.errors import ClientError
from tui.context.cache.history import SUMMARY_CALL, is_summary_call
from tui.context.cache.predict import CacheReport, cache_report, held_prompt
from tui.context.cache.llamacpp import LlamaCppCache, LlamaCppConfig
from tui.context.untrusted.visible import visible

from tui.controller.compute import Skipped
from tui.controller.events import Severity

if TYPE_CHECKING:
    from tui.client.reply import Reply
    from tui.context.cache.prefix import RequestShape
    from tui.context.request import RequestView
    from tui.sessions.model import RequestRecord

    from tui.controller.parts import Parts
    from tui.controller.workbench import Workbench


class ServerCache:
    def __init__(self, parts: "Parts") -> None:
        self.parts = parts
        self.model: LlamaCppCache | None = None
        self.summary_calls = 0  # each held under its own number (-1, -2, …): two are never taken for one

    def llama(self) -> bool:
        connection = self.parts.link.connection
        return connection is not None and connection.info.kind == "llama.cpp"

    async def connected(self) -> None:
        """Read the server's cache settings and seed the model (replaying the open session's requests)."""
        if not self.llama() or self.parts.client is None:
            return
        from tui.client.server_cache import read_cache_facts
        try:
            facts = await read_cache_facts(self.parts.client)
        except ClientError as exc:
            self.parts.notify(visible(f"the server's cache cannot be modelled: {exc}"), severity=Severity.WARNING)
            return
        wb = self.parts.wb
        if wb.session.requests:
            replayed = await self.parts.worker.run(lambda: self._replayed(facts.config()))
            if isinstance(replayed, Skipped):  # the app is closing
                return
            self.model, problem = replayed
            if problem:
                self.parts.notify(visible(f"the session's earlier requests could not be replayed into the model of "
                                        f"the server's cache ({problem}): it starts empty"), severity=Severity.WARNING)
        else:
            self.model = LlamaCppCache(facts.config())
        self._share()

    def _replayed(self, config: LlamaCppConfig) -> tuple[LlamaCppCache, str]:
        """The model after the session's own requests (a server restarted since holds less: the report says so),
        and why it starts empty instead ('' when it does not)."""
        from tui.sessions.cache_replay import replay_cache
        from tui.sessions.replay import Replayer
        wb = self.parts.wb
        try:
            _steps, model = replay_cache(wb.session, Replayer(wb.session, wb.template, wb.tokenizer, wb.cache_rule),
                                         "llama.cpp", config)
        except Exception as exc:  # noqa: BLE001 - a record this template cannot render, odd stored figures
            return LlamaCppCache(config), f"{type(exc).__name__}: {str(exc)[:200]}"
        return (model, "") if isinstance(model, LlamaCppCache) else (LlamaCppCache(config), "")

    def _share(self) -> None:
        """Give the workbench a copy to predict with, and compute the pane again."""
        self.parts.wb.server_cache = copy.copy(self.model) if self.model is not None else None
        self.parts.changed(save=False)

    def attach(self, wb: Workbench) -> None:
        """A session opened since: the server's cache outlives it, so its requests are predicted against it too."""
        if self.model is not None and wb.server_cache is None:
            wb.server_cache = copy.copy(self.model)

    def after_reply(self, record: "RequestRecord", view: "RequestView", reply: "Reply",
                    sent_at: float) -> CacheReport | None:
        """Advance the model by this request and compare the prediction with the server's cached figure."""
        if self.model is None or reply.failure is not None:
            return None
        report = cache_report(view.prefix, reply.cached_tokens, view.shape, view.document,
                              (reply.usage or {}).get("prompt_tokens"), reply.diagnostics)
        source = view.prefix.source
        record.cache_class = view.prefix.cause_class
        record.cache_source = SUMMARY_CALL if is_summary_call(source) else source  # (a file names them all 0)
        record.cache_place = view.prefix.place
        self.model.record(held_prompt(record.number, view.shape, record.reply, reply.usage, reply.timings, sent_at))
        self._share()
        return report

    def after_summary(self, shape: "RequestShape | None", reply: "Reply", sent_at: float) -> None:
        """ctxpane's own summary call took a slot too: the model holds its prompt, so the next request is
        predicted against it (and a miss is not blamed on another client)."""
        if self.model is None or shape is None or reply.failure is not None:
            return
        self.summary_calls += 1
        number = SUMMARY_CALL - self.summary_calls
        self.model.record(held_prompt(number, shape, reply.to_record(), reply.usage, reply.timings, sent_at))
        self._share()


def report_line(report: CacheReport | None) -> str:
    if report is None or report.reported is None:
        return ""
    mark = "✓" if report.agrees else "≠"
    return visible(f"cache {mark} predicted {report.predicted}, server reused {report.reported}: {report.explanation}")
