"""What a hosted provider's cache reuses of a new prompt, given the earlier prompts sent to it.

The rules are cache_rules.py's table; this module keeps the earlier prompts (bounded) and measures,
for each, what the new prompt shares with it. Times are passed in (seconds since the epoch), so the
result depends only on its inputs; without a time, lifetimes are not checked and a note says so.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from tui.context.cache.prefix import RequestShape
from tui.context.cache.history import HeldPrompt, Shared, shared_prefix
from tui.context.cache.rules import (BREAKPOINTS, PREFIX, UNITS, breakpoint_usage, disputed_for, minimum_for, prefix_cached,
                          rule_for, unit_cached)

KEPT = 32  # earlier prompts remembered: providers keep entries minutes to hours, a session sends few in that time


@dataclass(frozen=True)
class Reuse:
    number: int  # the earlier request the reused prefix comes from
    shared: Shared


@dataclass
class ProviderPrediction:
    cached: int
    source: Reuse | None
    write: int = 0
    write_lifetime: str = ""  # of the breakpoint that writes (its cache_control ttl)
    best_effort: bool = False
    candidates: list[Reuse] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class ProviderCache:
    def __init__(self, rule: str, model: object = None):
        self.rule, self.model = rule_for(rule), model
        self.held: list[HeldPrompt] = []

    def record(self, sent: HeldPrompt) -> None:
        self.held = [*self.held, sent][-KEPT:]

    def predict(self, current: RequestShape, now: float | None = None) -> ProviderPrediction:
        alive, notes = self._alive(now)
        kind = self.rule.kind
        if kind == PREFIX:
            found = self._prefix(current, alive)
        elif kind == UNITS:
            found = self._units(current, alive)
        elif kind == BREAKPOINTS:
            found = self._breakpoints(current, alive, now)
        else:
            found = ProviderPrediction(0, None)
        disputed = disputed_for(self.rule, self.model)
        found.best_effort = self.rule.best_effort
        found.notes = notes + found.notes + ([f"this model's minimum is disputed: {disputed}"] if disputed else [])
        return found

    def _marks(self, shape: RequestShape) -> list[tuple[int, str]]:
        """Each block's end and the lifetime it is marked with under this rule ("" when not): marks of another
        provider's kind mean nothing here; the provider's own managed breakpoint is added."""
        labels = {life.label for life in self.rule.lifetimes}
        marks = [(end, ttl if ttl in labels else "") for end, ttl in shape.blocks]
        roles = shape.block_roles if len(shape.block_roles) == len(marks) else []
        managed = max((i for i, role in enumerate(roles) if role in self.rule.managed_roles), default=None)
        if managed is not None and not marks[managed][1]:
            marks[managed] = (marks[managed][0], self.rule.lifetimes[0].label)
        return marks

    def _alive(self, now: float | None) -> tuple[list[HeldPrompt], list[str]]:
        longest = max((life.seconds for life in self.rule.lifetimes), default=None)
        if now is None or longest is None:
            note = [] if longest is None else ["no time given: entries are assumed alive"]
            return list(self.held), note
        return [h for h in self.held if h.sent_at is None or now - h.sent_at <= longest], []

    # -- automatic prefixes (OpenAI, Gemini) ---------------------------------------------------------
    def _prefix(self, current: RequestShape, alive: list[HeldPrompt]) -> ProviderPrediction:
        candidates = [Reuse(h.number, shared_prefix(h, current, 0)) for h in alive]
        best = max(candidates, key=lambda reuse: reuse.shared.tokens, default=None)
        cached = prefix_cached(self.rule, best.shared.tokens, current.tokens.total, self.model) if best else 0
        return ProviderPrediction(cached, best if cached else None, candidates=candidates)

    # -- stored units (DeepSeek) --------------------------------------------------------------------------
    def _units(self, current: RequestShape, alive: list[HeldPrompt]) -> ProviderPrediction:
        """Units: each earlier prompt's input end and output end, and common prefixes between two of them."""
        units: list[tuple[int, int, int]] = []  # length, what this request shares with its request, number
        shares = {h.number: shared_prefix(h, current, h.generated) for h in alive}
        for index, held in enumerate(alive):
            reach = shares[held.number].tokens
            units.append((held.prompt_tokens, reach, held.number))
            if held.reply_known and held.generated:
                units.append((held.prompt_tokens + held.generated, reach, held.number))
            for later in alive[index + 1:]:
                units.append((shared_prefix(held, later.shape, 0).tokens, reach, held.number))
        cached = unit_cached((length, reach) for length, reach, _ in units)
        source = next((number for length, reach, number in units if length == cached and reach >= length), None)
        candidates = [Reuse(number, shared) for number, shared in shares.items()]
        return ProviderPrediction(cached, Reuse(source, shares[source]) if source is not None else None,
                                  candidates=candidates)

    # -- explicit breakpoints (Anthropic) ----------------------------------------------------------------
    def _breakpoints(self, current: RequestShape, alive: list[HeldPrompt], now: float | None) -> ProviderPrediction:
        entries = self._entries(alive, now)
        blocks = self._marks(current)
        ends = [current.tokens.tokens_before(end) for end, _ in blocks]
        marked = [index for index, (_, ttl) in enumerate(blocks) if ttl]
        live = {}
        for (chars, digest), number in entries.items():
            if chars <= len(current.text) and _digest(current.text, chars) == digest:
                live[current.tokens.tokens_before(chars)] = number
        minimum = minimum_for(self.rule, self.model)
        usage = breakpoint_usage(ends, marked, live, current.tokens.total, minimum, self.rule)
        source = next((h for h in alive if h.number == live.get(usage.read)), None) if usage.read else None
        reuse = Reuse(source.number, shared_prefix(source, current, 0)) if source is not None else None
        lifetime = blocks[max(marked)][1] if marked and usage.write else ""  # the last breakpoint writes
        return ProviderPrediction(usage.read, reuse, usage.write, lifetime,
                                  notes=[usage.problem] if usage.problem else [])

    def _entries(self, alive: list[HeldPrompt], now: float | None) -> dict[tuple[int, str], int]:
        """Cache entries the earlier prompts wrote at their breakpoints and that are still alive."""
        minimum = minimum_for(self.rule, self.model)
        lifetimes = {life.label: life.seconds for life in self.rule.lifetimes}
        entries: dict[tuple[int, str], int] = {}
        for held in alive:
            for end, ttl in self._marks(held.shape):
                expired = now is not None and held.sent_at is not None and now - held.sent_at > lifetimes.get(ttl, 0)
                if ttl and not expired and held.shape.tokens.tokens_before(end) >= minimum:
                    entries[(end, _digest(held.shape.text, end))] = held.number
        return entries


def _digest(text: str, length: int) -> str:
    return hashlib.sha256(text[:length].encode("utf-8", "surrogatepass")).hexdigest()
