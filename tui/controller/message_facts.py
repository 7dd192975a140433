"""Each reply's facts, read from its request record for the transcript's figures (tui/context/message_figures.py).

A record is read once it names its reply (a finished request never changes again); records read leniently, so
an odd or older file shows what it can and never fails.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING, Mapping, Sequence

from tui.client.figures import reported_from_record
from tui.client.schemas import lenient_count
from tui.context.message_figures import ReplyFacts, message_figures

if TYPE_CHECKING:
    from tui.context.request import RequestView
    from tui.sessions.model import RequestRecord


class ReplyFactsCache:
    def __init__(self) -> None:
        self._read: dict[int, tuple[RequestRecord, str, ReplyFacts]] = {}  # id(record) -> (record, its reply id, facts)

    def facts(self, requests: Sequence[RequestRecord]) -> list[ReplyFacts]:
        found: list[ReplyFacts] = []
        kept: dict[int, tuple[RequestRecord, str, ReplyFacts]] = {}
        for record in requests:
            if not record.reply_id:
                continue
            seen = self._read.get(id(record))
            if seen is None or seen[0] is not record or seen[1] != record.reply_id:
                seen = (record, record.reply_id, read_facts(record))
            kept[id(record)] = seen
            found.append(seen[2])
        self._read = kept
        return found

    def lines(self, view: RequestView | None, requests: Sequence[RequestRecord]) -> Mapping[str, str]:
        """Each message's figures as one line, by message id."""
        figures = message_figures(view, self.facts(requests))
        return MappingProxyType({ident: line for ident, figure in figures.items() if (line := figure.line())})


def read_facts(record: RequestRecord) -> ReplyFacts:
    reply = record.reply or {}
    stored_timings = reply.get("timings")
    timings = stored_timings if isinstance(stored_timings, dict) else {}
    rate = timings.get("predicted_per_second")
    rate = float(rate) if isinstance(rate, (int, float)) and not isinstance(rate, bool) and 0 < rate < 1e9 else None
    return ReplyFacts(record.reply_id, reported_from_record(reply), lenient_count(reply.get("first_token_ms")),
                      lenient_count(reply.get("elapsed_ms")), rate)
