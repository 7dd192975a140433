"""The budget and the truncation policies, with a ledger of every message left out.

Budget = context window - output reserved (max_tokens). A message's cost is every token the
template spends on it (header, text, end-of-turn); text of no message (BOS, the generation prompt)
is fixed overhead. Rules for every policy: pinned messages (system prompts, anything pinned) are
never dropped, the newest user message is never dropped, and an assistant tool call travels with
its tool results.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypedDict

POLICIES = ("keep-all", "drop-oldest", "keep-last-n", "summarise", "curated")  # curated: policy/curated.py


class PolicyError(ValueError):
    """An unknown policy or an impossible setting."""


TRIM_RANGE = (20, 10 ** 6)  # the curated policy's trim threshold: below 20 tokens a line or two is an item


@dataclass
class PolicySettings:
    name: str = "keep-all"
    context_window: int | None = None  # None: unknown, nothing is dropped
    max_tokens: int = 0  # reserved for the reply
    keep_last: int = 4  # turns, for keep-last-n
    trim_over: int = 400  # tokens, for curated: a longer item keeps only its lines relevant to the question
    summary: str | None = None  # summarise: the text a model call produced, when there is one
    summary_cost: int = 0  # tokens that model call cost (prompt + completion)
    summary_of: list[str] = field(default_factory=list)  # ids of the messages the summary stands for

    def __post_init__(self) -> None:
        if self.name not in POLICIES:
            raise PolicyError(f"unknown policy {self.name!r}; choose one of {', '.join(POLICIES)}")
        if self.keep_last < 1:
            raise PolicyError("keep-last-n needs N of at least 1")
        if not TRIM_RANGE[0] <= self.trim_over <= TRIM_RANGE[1]:
            raise PolicyError(f"curated trims items over N tokens: N from {TRIM_RANGE[0]} to {TRIM_RANGE[1]:,}")

    @property
    def budget(self) -> int | None:
        return None if self.context_window is None else self.context_window - self.max_tokens


@dataclass
class LedgerEntry:
    message: int  # index in the session's messages
    message_id: str
    role: str
    tokens: int  # what it would have cost in this request
    policy: str
    reason: str
    since_request: int  # the first request it was left out of


@dataclass
class Plan:
    kept: list[int]
    ledger: list[LedgerEntry] = field(default_factory=list)
    over_budget: bool = False
    warning: str = ""
    sent_texts: dict[int, str] = field(default_factory=dict)  # a message sent cut (the curated policy's trim)


def groups(roles: list[str], calls: list[bool]) -> list[list[int]]:
    """Messages in units that are dropped together: a tool call with the tool results after it."""
    units: list[list[int]] = []
    for index, role in enumerate(roles):
        if role == "tool" and units and (calls[units[-1][0]] or roles[units[-1][-1]] == "tool"):
            units[-1].append(index)
        else:
            units.append([index])
    return units


def protected(roles: list[str], pinned: list[bool]) -> set[int]:
    keep = {i for i, role in enumerate(roles) if pinned[i] or role in ("system", "developer")}
    users = [i for i, role in enumerate(roles) if role == "user"]
    if users:
        keep.add(users[-1])
    return keep


def plan_truncation(roles: list[str], costs: list[int], overhead: int, pinned: list[bool], calls: list[bool],
                    settings: PolicySettings, request_number: int = 1,
                    previous: dict[str, int] | None = None, ids: list[str] | None = None,
                    drop_more: int = 0) -> Plan:
    """Which messages to send. `costs` are per message, `overhead` the tokens of no message.

    `drop_more` drops that many more of the oldest units: used when a plan, once rendered, came out
    over budget (a summary or the template cost more than the per-message estimate).
    """
    ids = ids or [str(i) for i in range(len(roles))]
    previous = previous or {}
    units = groups(roles, calls)
    keep = protected(roles, pinned)
    total = overhead + sum(costs)
    budget = settings.budget
    if settings.name == "keep-all" or (budget is not None and total <= budget and settings.name != "keep-last-n"):
        over = budget is not None and total > budget
        warning = f"{total} tokens exceed the budget of {budget}: the server may refuse" if over else ""
        return Plan(list(range(len(roles))), [], over, warning)
    if settings.name == "keep-last-n":
        dropped = _older_than_last_turns(roles, units, keep, settings.keep_last)
        reason = f"older than the last {settings.keep_last} turns"
    else:
        reserve = _summary_reserve(settings)
        dropped = _drop_oldest(units, costs, keep, (budget or 0) - overhead - reserve, drop_more)
        reason = f"did not fit the budget of {budget} tokens (walking back from the newest)"
    orphans = _orphan_replies(roles, units, dropped, keep) if dropped else set()
    dropped |= orphans
    ledger = [LedgerEntry(i, ids[i], roles[i], costs[i], settings.name, ORPHAN if i in orphans else reason,
                          previous.get(ids[i], request_number)) for i in sorted(dropped)]
    kept = [i for i in range(len(roles)) if i not in dropped]
    kept_total = overhead + sum(costs[i] for i in kept) + (_summary_reserve(settings) if dropped else 0)
    over = budget is not None and kept_total > budget
    warning = f"pinned and newest messages alone need {kept_total} tokens, over the budget of {budget}" if over else ""
    return Plan(kept, ledger, over, warning)


ORPHAN = "its question was dropped: the request would start with a reply to nothing"


def _orphan_replies(roles: list[str], units: list[list[int]], dropped: set[int], keep: set[int]) -> set[int]:
    """The assistant units (a reply, a tool call with its results) that would open the conversation once the
    turns before them are dropped: they go too, whole."""
    found: set[int] = set()
    for unit in units:
        if all(i in dropped for i in unit) or all(roles[i] in ("system", "developer") for i in unit):
            continue
        if roles[unit[0]] != "assistant" or any(i in keep for i in unit):
            break
        found.update(unit)
    return found


def _summary_reserve(settings: PolicySettings) -> int:
    if settings.name != "summarise":
        return 0
    estimate = len(settings.summary or "") // 3  # a rough token estimate for the summary message
    if settings.context_window:  # a summary call's output is bounded to a third of the window (summary_call.py)
        estimate = min(estimate, settings.context_window // 3)
    return max(16, estimate)


def _drop_oldest(units: list[list[int]], costs: list[int], keep: set[int], room: int, more: int = 0) -> set[int]:
    """Walk back from the newest unit; once one does not fit, it and everything older is dropped."""
    fixed = sum(costs[i] for i in keep)
    left = room - fixed
    dropped: set[int] = set()
    full = False
    for unit in reversed(units):
        if any(i in keep for i in unit):
            continue
        cost = sum(costs[i] for i in unit)
        if full or cost > left:
            full = True
            dropped.update(unit)
        else:
            left -= cost
    for unit in units:  # `more` further units, oldest first, when the rendering said so
        if more <= 0:
            break
        if not any(i in keep or i in dropped for i in unit):
            dropped.update(unit)
            more -= 1
    return dropped


def _older_than_last_turns(roles: list[str], units: list[list[int]], keep: set[int], turns: int) -> set[int]:
    users = [i for i, role in enumerate(roles) if role == "user"]
    if len(users) <= turns:
        return set()
    first_kept = users[-turns]
    return {i for unit in units for i in unit if unit[0] < first_kept and not any(j in keep for j in unit)}


class WindowHit(TypedDict):
    """A message holding the text looked for: its place, whether it is sent, and if not why."""

    message: int
    kept: bool
    reason: str
    policy: str


def still_in_window(texts: list[str], plan: Plan, query: str) -> list[WindowHit]:
    """Where `query` occurs in the conversation, and whether that message is sent or was dropped."""
    dropped = {entry.message: entry for entry in plan.ledger}
    hits: list[WindowHit] = []
    lowered = query.lower()
    for index, text in enumerate(texts):
        if lowered and lowered in text.lower():
            entry = dropped.get(index)
            cut = index in plan.sent_texts and lowered not in plan.sent_texts[index].lower()
            hits.append({"message": index, "kept": entry is None and not cut,
                         "reason": entry.reason if entry else "cut out of the message as sent (its relevant lines "
                                                             "kept)" if cut else "",
                         "policy": entry.policy if entry else "curated" if cut else ""})
    return hits


class CostRow(TypedDict):
    request: int
    sent: int
    keep_all: int
    sent_total: int
    keep_all_total: int


def cost_series(requests: list[tuple[int, int]]) -> list[CostRow]:
    """Tokens sent per request and in total, under the policy and under keep-all, side by side.

    Keep-all grows with the square of the number of turns; a fixed budget grows in a straight line.
    """
    rows: list[CostRow] = []
    sent_total, all_total = 0, 0
    for number, (sent, keep_all) in enumerate(requests, start=1):
        sent_total += sent
        all_total += keep_all
        rows.append({"request": number, "sent": sent, "keep_all": keep_all,
                     "sent_total": sent_total, "keep_all_total": all_total})
    return rows
