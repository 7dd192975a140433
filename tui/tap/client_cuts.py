"""The client's own cuts: messages a request of a conversation no longer carries, as ledger entries whose author
is the client, each saying what it did to the cache."""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import Any

from tui.context.policy.truncation import LedgerEntry
from tui.context.messages import Message, message_from_dict
from tui.sessions.model import RequestRecord
from tui.sessions.replay import ledger_entries

from tui.tap.conversations import REWRITTEN, TRIMMED, Match
from tui.tap.state import Thread


def messages_of(wire: list, ids: list[str]) -> list[Message]:
    """The wire messages as session messages, with the ids given."""
    messages = []
    for index, item in enumerate(wire):
        message = message_from_dict({**item, "id": ids[index]} if isinstance(item, dict) else item, index)
        messages.append(message)
    return messages


def client_cuts(match: Match, previous_view: Any, previous_ids: list[str], number: int,
                thread: Thread) -> list[dict]:
    """The client's own ledger: each message the previous request carried and this one does not."""
    if previous_view is None or not match.vanished:
        return []
    tokens: dict[str, int] = {}
    for ident, _kind, _start, _end, count in previous_view.shape.spans:
        tokens[ident] = tokens.get(ident, 0) + count
    entries = []
    for gone in match.vanished:
        if gone.rewritten:
            reason = (f"the client rewrote its system prompt: the text request {number - 1} carried "
                      f"({tokens.get(gone.message_id, 0)} tokens) is gone")
        else:
            reason = (f"the client left it out: request {number - 1} carried it, request {number} does not "
                      "(the client trimmed or compacted its history)")
        entries.append(asdict(LedgerEntry(gone.index, gone.message_id, gone.role, tokens.get(gone.message_id, 0),
                                          REWRITTEN if gone.rewritten else TRIMMED, reason, number)))
    return entries


def with_cache_effect(thread: Thread, index: int, record: RequestRecord, view: Any) -> Any:
    """The request's view, each of the client's cuts saying what it did to the cache."""
    prefix = view.prefix
    effect = (f"; the cache: {prefix.predicted_cached} of {view.sent_tokens} tokens can be reused "
              f"({prefix.cause})")
    for entry in record.dropped:
        entry["reason"] = (entry["reason"] + effect)[:4000]
    view = replace(view, ledger=ledger_entries(record))
    thread.replayer._views[index] = view  # noqa: SLF001 - the same view, its ledger's reasons completed
    return view
