"""The curated policy inside a request (request.build_request): messages become the policy's items, its verdicts
become the plan and the ledger, and a trimmed item's text replaces its content before the request is fenced."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from tui.context.policy.curated import Curation, Item, Verdict, curate
from tui.context.policy.truncation import LedgerEntry, Plan, PolicySettings
from tui.context.trust import standing

if TYPE_CHECKING:
    from tui.context.messages import Message
    from tui.context.tokens.counting import Tokenizer

LEFT_OUT = (Verdict.SUPERSEDED, Verdict.DROPPED)


def curated_plan(messages: list[Message], costs: list[int], overhead: int, policy: PolicySettings,
                 tokenizer: Tokenizer, ids: list[str], request_number: int, previous: dict[str, int],
                 short_by: int = 0, now: float | None = None) -> tuple[list[Message], Plan, Curation]:
    """The messages as sent (trimmed ones cut), the plan, and the policy's ledger. `short_by`: tokens the budget
    is made smaller by (a rendering came out over it: the per-message costs are an estimate)."""
    items = [Item(i, m.role, m.text(), costs[i], m.pinned, m.provenance.key, bool(m.tool_calls),
                  isinstance(m.content, str), standing(m, now).weight, m.provenance.trusted)
             for i, m in enumerate(messages)]
    budget = None if policy.budget is None else policy.budget - short_by
    curation = curate(items, overhead, budget, lambda text: len(tokenizer.plain_starts(text)[0]), policy.trim_over)
    sent = [replace(m, content=curation.texts[i]) if i in curation.texts else m for i, m in enumerate(messages)]
    ledger = [LedgerEntry(e.index, ids[e.index], messages[e.index].role, costs[e.index], policy.name, e.reason,
                          previous.get(ids[e.index], request_number)) for e in curation.entries if e.verdict in LEFT_OUT]
    return sent, Plan(curation.kept, ledger, sent_texts=dict(curation.texts)), curation
