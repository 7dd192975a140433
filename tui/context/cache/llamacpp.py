"""A model of llama.cpp's prompt reuse: its slots and its host-memory prompt cache, request by request.

What the server does (measured on build b11669 with `-lv 4`, see tests/test_cache_server.py):
- A request goes to the idle slot whose prompt shares the largest fraction of the new prompt, if that
  fraction is above --slot-prompt-similarity (0.10); otherwise to the least recently used slot.
- When the slot was chosen by LRU, or would keep less than half of its own tokens, its prompt is saved
  to the host cache (--cache-ram, 8192 MiB by default) and the cached prompt that keeps more of itself
  and covers more of the new prompt (keeping at least a quarter of itself) is loaded in its place,
  leaving the cache.
- Every other idle slot is saved to the cache when a task starts (--cache-idle-slots).
- Saving skips a prompt the cache already holds whole, and drops cached prompts the new one holds whole.
- The cache drops its oldest prompts past its MiB limit, then past max(n_ctx tokens, MiB / bytes per token).
- This model's memory is bounded however long the run: where the server's token limit is not known (the
  state size per token is not), its host cache keeps at most slots x CONTEXTS_PER_SLOT x n_ctx tokens
  (UNKNOWN_CONTEXT for an unknown n_ctx; past n_ctx entries are marked uncertain anyway), and never more than
  PROMPTS_PER_SLOT prompts a slot; the oldest are dropped first.
- A slot holds the prompt and every generated token but the last; the reuse (`cache_n`) is the common
  prefix with the new prompt, less one when it is the whole prompt (the last token is evaluated again).
"""

from __future__ import annotations

import copy
import threading
from dataclasses import dataclass, field

from tui.context.cache.prefix import RequestShape
from tui.context.cache.history import HeldPrompt, Shared, contains, request_name, shared_prefix

MIB = 1 << 20
UNKNOWN_CONTEXT = 131_072  # tokens a slot is taken to hold when the server's n_ctx is not known


@dataclass(frozen=True)
class LlamaCppConfig:
    slots: int = 1  # -np
    similarity: float = 0.10  # --slot-prompt-similarity; 0 turns slot choice by similarity off
    cache_ram_mib: int = 8192  # --cache-ram; 0 turns the host cache off, -1 leaves only the token limit
    cache_tokens: int = 0  # the host cache's token limit: the server's n_ctx (0: none)
    bytes_per_token: int | None = None  # saved state per token; None: unknown, the MiB limit cannot be applied
    cache_idle_slots: bool = True  # --cache-idle-slots
    clear_idle_slots: bool = False  # a unified KV buffer also clears the idle slots it saved


@dataclass
class _Slot:
    id: int
    held: HeldPrompt | None = None
    last_used: int = -1


@dataclass(frozen=True)
class Source:
    """Where the reused prefix comes from."""

    number: int  # the earlier request
    place: str  # "slot 0", or "prompt cache -> slot 0" when it was loaded from host memory
    shared: Shared
    certain: bool = True  # False: a cache entry the MiB limit may already have dropped (state size unknown)


@dataclass
class ServerPrediction:
    cached: int
    slot: int
    chosen_by: str  # "similarity" or "LRU"
    source: Source | None
    candidates: list[Source] = field(default_factory=list)  # every prompt held, with what it shares
    notes: list[str] = field(default_factory=list)


def held_tokens(held: HeldPrompt) -> int:
    """Tokens a slot keeps after the request: the prompt and all generated tokens but the last."""
    return held.prompt_tokens + max(0, held.generated - 1)


def _share(held: HeldPrompt, current: RequestShape) -> Shared:
    return shared_prefix(held, current, max(0, held.generated - 1))


class _Shares:
    """What each held prompt shares with one request shape, each worked out once: the prediction before a request
    and the record after it ask the same of every prompt held (the work per request stays flat however long the
    run). Locked: a prediction may run on another thread than the record."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._current: RequestShape | None = None
        self._found: dict[int, tuple[HeldPrompt, Shared]] = {}

    def of(self, held: HeldPrompt, current: RequestShape) -> Shared:
        with self._lock:
            if current is not self._current:
                self._current, self._found = current, {}
            hit = self._found.get(id(held))
            if hit is not None and hit[0] is held:
                return hit[1]
        shared = _share(held, current)
        with self._lock:
            if current is self._current:
                self._found[id(held)] = (held, shared)
        return shared


class LlamaCppCache:
    """The server's state as far as this session's requests built it; `record` each request sent."""

    PROMPTS_PER_SLOT = 32  # host-cache prompts kept per slot (each prompt's shape costs memory of its own)
    CONTEXTS_PER_SLOT = 4  # n_ctx-sized prompts kept per slot where the server's own token limit is unknown

    def __init__(self, config: LlamaCppConfig = LlamaCppConfig()):
        self.config = config
        self.slots = [_Slot(index) for index in range(max(1, config.slots))]
        self.saved: list[HeldPrompt] = []  # the host cache, oldest first
        self.clock = 0
        self._shares = _Shares()

    def predict(self, current: RequestShape) -> ServerPrediction:
        """What the server will reuse for `current`, with every prompt held as a candidate, without changing the
        model."""
        twin = copy.copy(self)
        candidates = twin._candidates(current)  # (before the slot is taken: a swap changes what is held)
        prediction = twin._take_slot(current)[0]
        prediction.candidates = candidates
        return prediction

    def record(self, sent: HeldPrompt) -> ServerPrediction:
        """Advance the model by one request: the slot it takes then holds `sent` (with its reply). Its prediction
        lists no candidates (`predict` does): nobody reads them here, and they were half the work of a long run."""
        prediction, slot = self._take_slot(sent.shape)
        self.clock += 1
        slot.held, slot.last_used = sent, self.clock
        return prediction

    def __copy__(self) -> "LlamaCppCache":
        twin = LlamaCppCache.__new__(LlamaCppCache)
        twin.config, twin.saved, twin.clock, twin._shares = self.config, list(self.saved), self.clock, self._shares
        twin.slots = [_Slot(s.id, s.held, s.last_used) for s in self.slots]
        return twin

    # -- one request ----------------------------------------------------------------------------------
    def _take_slot(self, current: RequestShape) -> tuple[ServerPrediction, _Slot]:
        slot, chosen_by, keep = self._choose(current)
        loaded = None
        if self._cache_on and (chosen_by == "LRU" or keep < 0.5):
            loaded = self._swap(slot, current)
        if self._cache_on and self.config.cache_idle_slots:
            self._save_idle(slot)
        source = None
        if slot.held is not None:
            shared = self._shares.of(slot.held, current)
            place = f"prompt cache -> slot {slot.id}" if loaded else f"slot {slot.id}"
            source = Source(slot.held.number, place, shared, loaded is None or loaded.certain)
        total = current.tokens.total
        cached = max(0, min(source.shared.tokens, total - 1)) if source else 0
        return ServerPrediction(cached, slot.id, chosen_by, source, [], self._notes(loaded)), slot

    def _choose(self, current: RequestShape) -> tuple[_Slot, str, float]:
        """The slot the server picks, how, and the fraction of its own tokens it would keep."""
        total = max(1, current.tokens.total)
        best, best_similarity, keep = None, 0.0, 1.0
        for slot in self.slots:
            if slot.held is None or self.config.similarity <= 0:
                continue
            shared = self._shares.of(slot.held, current).tokens
            similarity = shared / total
            if similarity > best_similarity and similarity > self.config.similarity:
                best, best_similarity, keep = slot, similarity, shared / max(1, held_tokens(slot.held))
        if best is not None:
            return best, "similarity", keep
        lru = min(self.slots, key=lambda slot: (slot.last_used, slot.id))
        return lru, "LRU", 1.0

    @property
    def _cache_on(self) -> bool:
        return self.config.cache_ram_mib != 0

    def _swap(self, slot: _Slot, current: RequestShape) -> Source | None:
        """Save the slot's prompt, then load the cached prompt that serves `current` better, if any."""
        total = max(1, current.tokens.total)
        if slot.held is not None:
            self._save(slot.held)
        base = self._shares.of(slot.held, current).tokens if slot.held else 0
        best_keep = base / max(1, held_tokens(slot.held)) if slot.held else -1.0
        best_similarity, found = base / total, None
        for entry in self.saved:
            shared = self._shares.of(entry, current)
            keep, similarity = shared.tokens / max(1, held_tokens(entry)), shared.tokens / total
            if keep >= 0.25 and keep > best_keep and similarity > best_similarity:
                best_keep, best_similarity, found = keep, similarity, entry
        if found is None:
            return None
        source = Source(found.number, "prompt cache", self._shares.of(found, current),
                        self._certain_entries()[id(found)])
        self.saved.remove(found)
        slot.held = found
        return source

    def _save_idle(self, taken: _Slot) -> None:
        for slot in self.slots:
            if slot is not taken and slot.held is not None:
                self._save(slot.held)
                if self.config.clear_idle_slots:
                    slot.held = None

    def _save(self, held: HeldPrompt) -> None:
        size = held_tokens(held)
        if any(contains(entry, held, held_tokens(entry), size) for entry in self.saved):
            return  # already in the cache whole
        self.saved = [entry for entry in self.saved if not contains(held, entry, size, held_tokens(entry))]
        self.saved.append(held)
        self._evict()

    # -- the cache's limits ----------------------------------------------------------------------------
    def _evict(self) -> None:
        limit_bytes, per_token = self._limit_bytes, self.config.bytes_per_token
        total = self._tokens()  # kept up to date as the oldest go (not summed again for each)
        if limit_bytes and per_token:
            while len(self.saved) > 1 and total * per_token > limit_bytes:
                total -= held_tokens(self.saved.pop(0))
        limit = self._token_limit()
        while limit and len(self.saved) > 1 and total > limit:
            total -= held_tokens(self.saved.pop(0))
        slots = len(self.slots)
        held_limit = limit or slots * self.CONTEXTS_PER_SLOT * (self.config.cache_tokens or UNKNOWN_CONTEXT)
        while len(self.saved) > slots * self.PROMPTS_PER_SLOT or len(self.saved) > 1 and total > held_limit:
            total -= held_tokens(self.saved.pop(0))

    @property
    def _limit_bytes(self) -> int:
        return self.config.cache_ram_mib * MIB if self.config.cache_ram_mib > 0 else 0

    def _token_limit(self) -> int | None:
        """The token limit in force, None when it depends on the unknown state size."""
        tokens, limit_bytes, per_token = self.config.cache_tokens, self._limit_bytes, self.config.bytes_per_token
        if not tokens:
            return None
        if not limit_bytes:
            return tokens
        return max(tokens, limit_bytes // per_token) if per_token else None

    def _tokens(self) -> int:
        return sum(held_tokens(entry) for entry in self.saved)

    def _candidates(self, current: RequestShape) -> list[Source]:
        held = [(f"slot {s.id}", s.held) for s in self.slots if s.held is not None]
        held += [("prompt cache", entry) for entry in self.saved]
        certain = self._certain_entries()
        return [Source(h.number, place, self._shares.of(h, current), place != "prompt cache" or certain[id(h)])
                for place, h in held]

    def _certain_entries(self) -> dict[int, bool]:
        """Whether the server surely still holds each cache entry (by id): it and the newer entries fit the guaranteed
        limit, summed from the newest back once."""
        if self._token_limit() is not None or not self.config.cache_tokens:
            return {id(entry): True for entry in self.saved}
        found, newer = {}, 0
        for entry in reversed(self.saved):
            newer += held_tokens(entry)
            found[id(entry)] = newer <= self.config.cache_tokens
        return found

    def _notes(self, loaded: Source | None) -> list[str]:
        if loaded is not None and not loaded.certain:
            return [f"{request_name(loaded.number)} is older than the {self.config.cache_tokens} tokens the prompt "
                    "cache surely keeps: it may have been dropped (the state size per token is not known)"]
        return []
