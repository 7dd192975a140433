"""The client's own cuts: messages a request of a conversation no longer carries, as ledger entries whose author
is the client, each saying what it did to the cache."""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import Any

from tui.context.policy.truncation import LedgerEntry
from tui.context.messages import Message, wire_message
from tui.sessions.model import RequestRecord
from tui.sessions.replay import ledger_entries

from tui.tap.conversations import REWRITTEN, TRIMMED, Match
from tui.tap.state import Thread


def messages_of(wire: list, ids: list[str]) -> list[Message]:
    """The wire messages as session messages, with the ids given, trusted or not by their roles (wire_message)."""
    return [wire_message(item, index, ids[index]) for index, item in enumerate(wire)]


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
        elif match.compacted:
            reason = (f"the client compacted its session's history: request {number - 1} carried it, request "
                      f"{number} of the same session does not (a summary stands for it)")
        elif match.replaced:
            reason = (f"the client sent its latest turns again changed: request {number - 1} carried it, request "
                      f"{number} of the same session carries another in its place")
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


def compaction_record(match: Match, wire: list, previous_ids: list[str], previous_view: Any,
                      previous: RequestRecord | None, record: RequestRecord) -> dict[str, Any]:
    """The record's `compaction`: what left (messages and their tokens), what stands for it now (the new messages,
    the start of their text), and the prompt's tokens before and after."""
    tokens: dict[str, int] = {}
    for ident, _kind, _start, _end, count in (previous_view.shape.spans if previous_view is not None else []):
        tokens[ident] = tokens.get(ident, 0) + count
    known = set(previous_ids)
    new = [(ident, item) for ident, item in zip(match.message_ids, wire) if ident not in known
           and isinstance(item, dict) and item.get("role") not in ("system", "developer")]
    summary = " ".join(_text(item.get("content")) for _ident, item in new)
    left = [gone for gone in match.vanished if not gone.rewritten]  # (a system prompt rewritten did not leave)
    return {"previous_request": previous.number if previous is not None else None,
            "left": len(left), "left_tokens": sum(tokens.get(gone.message_id, 0) for gone in left),
            "summary_ids": [ident for ident, _item in new][:1000], "summary": summary[:1000],
            "tokens_before": previous.document_tokens if previous is not None else 0,
            "tokens_after": record.document_tokens}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(part.get("text") or "") for part in content if isinstance(part, dict))
    return ""
