"""The curated policy: the window built from a store under a budget, not by position.

Rules, in order. Pinned items (system and developer prompts, anything pinned) are kept and have their own line of
the budget. The question (the newest user message) is kept, and last. Of the items that carry the same key (a
corrected fact names the one it replaces by its provenance key), only the newest is kept: the older are superseded
by it, but an untrusted item (a document, a memory, a tool's result) never supersedes a trusted one (what the user
typed): that is superseded only by a newer trusted item, and its line in the ledger says which newer untrusted item
it was kept against. Every other item is ranked by its relevance to the question, a BM25 score (the bm25s library) a person can
read in the ledger; an item longer than TRIM_OVER tokens is cut to its lines that score, before it is fenced. The
ranked items are packed into what the budget leaves, best first; equal scores go newest first. A tool call travels
with its results (one unit, scored by its best member). What is kept is sent in the conversation's order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Callable, Sequence

TRIM_OVER = 400  # tokens: a longer item keeps only its lines relevant to the question
MAX_LINES_SCORED = 20_000  # lines of one item looked at for trimming (the rest are cut)
_WORD = re.compile(r"\w+")


class Verdict(StrEnum):
    PINNED = "pinned"
    QUESTION = "question"
    KEPT = "kept"
    TRIMMED = "trimmed"
    SUPERSEDED = "superseded"
    DROPPED = "dropped"


@dataclass(frozen=True)
class Item:
    """One message as the policy sees it."""

    index: int
    role: str
    text: str
    tokens: int  # what it costs in the request (its template text included)
    pinned: bool = False
    key: str = ""  # the provenance key: a newer item with the same key supersedes this one
    calls: bool = False  # an assistant turn with tool calls (its results follow it)
    trimmable: bool = True  # plain text (content parts are sent whole)
    weight: float = 1.0  # what its relevance is multiplied by (a memory's decays with its age: tui/context/trust.py)
    trusted: bool = True  # only a trusted user message (one the user typed) can be the question


@dataclass(frozen=True)
class Curated:
    """The ledger's line for one item: what the policy did with it, and why."""

    index: int
    verdict: Verdict
    tokens: int  # what it costs as sent (trimmed: after the trim)
    score: float = 0.0
    reason: str = ""
    superseded_by: int | None = None
    lines_kept: tuple[tuple[int, int], ...] = ()  # 1-based, inclusive line ranges kept of a trimmed item


@dataclass
class Curation:
    entries: list[Curated]
    texts: dict[int, str] = field(default_factory=dict)  # a trimmed item's text as sent
    budget: int | None = None
    pinned_tokens: int = 0
    packed_tokens: int = 0

    @property
    def kept(self) -> list[int]:
        return sorted(e.index for e in self.entries if e.verdict not in (Verdict.SUPERSEDED, Verdict.DROPPED))

    def entry(self, index: int) -> Curated | None:
        return next((e for e in self.entries if e.index == index), None)


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def scores(query: str, documents: Sequence[str]) -> list[float]:
    """BM25 of each document against the query (0 for a document sharing no word with it)."""
    if not documents or not words(query):
        return [0.0] * len(documents)
    import bm25s  # loaded with the first curated request, not at start-up

    corpus = [" ".join(words(text)) or "_" for text in documents]
    indexed = bm25s.tokenize(corpus, stopwords="en", show_progress=False)
    if not any(indexed.ids) or not indexed.vocab or set(indexed.vocab) <= {""}:
        return [0.0] * len(documents)  # no document has a word the ranking keeps (an image, "1", "I")
    retriever = bm25s.BM25()
    retriever.index(indexed, show_progress=False)
    # the query as words, read with the corpus's vocabulary (ids from a tokenize of its own would name other words)
    asked = bm25s.tokenize([" ".join(words(query))], stopwords="en", show_progress=False, return_ids=False)
    if not asked[0]:
        return [0.0] * len(documents)
    found, values = retriever.retrieve(asked, k=len(documents), show_progress=False)
    by_document = {int(doc): float(value) for doc, value in zip(found[0], values[0])}
    return [round(by_document.get(i, 0.0), 4) for i in range(len(documents))]


def trimmed(text: str, query: str) -> tuple[str, tuple[tuple[int, int], ...]] | None:
    """`text` cut to its lines relevant to `query` (scoring at least half the best line), with a note where lines
    were cut; None when no line is relevant."""
    lines = text.split("\n")[:MAX_LINES_SCORED]
    line_scores = scores(query, lines)
    best = max(line_scores, default=0.0)
    keep = [n for n, score in enumerate(line_scores) if score > 0 and score >= best / 2]  # the lines that matter most
    if not keep:
        return None
    ranges: list[tuple[int, int]] = []
    for n in keep:
        if ranges and ranges[-1][1] == n:
            ranges[-1] = (ranges[-1][0], n + 1)
        else:
            ranges.append((n + 1, n + 1))
    out, shown_to = [], 0
    total = len(text.split("\n"))
    for first, last in ranges:
        if first - 1 > shown_to:
            out.append(f"[… lines {shown_to + 1}-{first - 1} cut by the curated policy …]")
        out += lines[first - 1:last]
        shown_to = last
    if shown_to < total:
        out.append(f"[… lines {shown_to + 1}-{total} cut by the curated policy …]")
    return "\n".join(out), tuple(ranges)


def units(items: Sequence[Item]) -> list[list[int]]:
    """Positions in `items` sent or left out together: a tool call with the tool results after it."""
    grouped: list[list[int]] = []
    for position, item in enumerate(items):
        if item.role == "tool" and grouped and (items[grouped[-1][0]].calls or items[grouped[-1][-1]].role == "tool"):
            grouped[-1].append(position)
        else:
            grouped.append([position])
    return grouped


def curate(items: Sequence[Item], overhead: int, budget: int | None, count: Callable[[str], int],
           trim_over: int = TRIM_OVER) -> Curation:
    """What the curated policy sends of `items` (see the module's rules); `count` counts a text's tokens."""
    users = [p for p, item in enumerate(items) if item.role == "user"]
    asked = [p for p in users if items[p].trusted]  # a document, memory or channel message is never the question
    question = asked[-1] if asked else users[-1] if users else None
    query = items[question].text if question is not None else ""
    fixed = {p for p, item in enumerate(items) if item.pinned or item.role in ("system", "developer")}
    entries: dict[int, Curated] = {}
    for p in fixed:
        entries[p] = Curated(items[p].index, Verdict.PINNED, items[p].tokens, reason="pinned: always sent")
    if question is not None:
        entries[question] = Curated(items[question].index, Verdict.QUESTION, items[question].tokens,
                                    reason="the question: always sent, last")
    held = _supersede(items, entries)
    for unit in units(items):  # a unit travels whole: a member fixed above decides for the others
        _whole_unit(items, unit, entries)
    ranked = [u for u in units(items) if not any(p in entries for p in u)]
    unit_scores = _unit_scores(items, ranked, query)
    cuts: dict[int, tuple[str, tuple[tuple[int, int], ...], int]] = {}
    costs = {id(u): sum(_trim(items, p, query, trim_over, count, cuts) for p in u) for u in ranked}
    pinned_tokens = sum(items[p].tokens for p in entries if entries[p].verdict in (Verdict.PINNED, Verdict.QUESTION))
    room = None if budget is None else budget - overhead - pinned_tokens
    packed = 0
    order = sorted(ranked, key=lambda u: (-unit_scores[id(u)], -u[-1]))  # best first; a tie: the newest first
    for unit in order:
        cost, score = costs[id(unit)], unit_scores[id(unit)]
        fits = room is None or cost <= room
        if fits:
            room = None if room is None else room - cost
            packed += cost
        for p in unit:
            entries[p] = _packed_entry(items[p], p, fits, score, room, cost, cuts)
    _drop_orphans(items, entries)
    for p, note in held.items():
        if entries[p].verdict not in LEFT_OUT:
            entries[p] = replace(entries[p], reason=f"{entries[p].reason}; {note}")
    texts = {items[p].index: cut[0] for p, cut in cuts.items() if entries[p].verdict is Verdict.TRIMMED}
    return Curation([entries[p] for p in sorted(entries)], texts, budget, pinned_tokens, packed)


LEFT_OUT = (Verdict.SUPERSEDED, Verdict.DROPPED)
ORPHAN = "its question was left out: the request would have a reply to nothing"


def _supersede(items: Sequence[Item], entries: dict[int, Curated]) -> dict[int, str]:
    """Mark each older version of a key superseded by the newest that may replace it: any newer version replaces an
    untrusted item, only a newer trusted one a trusted item (a document must not put itself in place of what the
    user said by naming its key). Returns a note for each trusted item kept against a newer untrusted version."""
    newest: dict[str, int] = {}
    newest_trusted: dict[str, int] = {}
    for p, item in enumerate(items):
        if item.key:
            newest[item.key] = p
            if item.trusted:
                newest_trusted[item.key] = p
    held: dict[int, str] = {}
    for p, item in enumerate(items):
        if not item.key or p in entries:
            continue
        by = newest_trusted[item.key] if item.trusted else newest[item.key]
        if by != p:
            entries[p] = Curated(item.index, Verdict.SUPERSEDED, item.tokens, superseded_by=items[by].index,
                                 reason=f"superseded by #{items[by].index} (key {item.key!r})")
        elif newest[item.key] != p:
            held[p] = (f"not superseded by #{items[newest[item.key]].index} (key {item.key!r}): an untrusted item "
                       "never supersedes a trusted one")
    return held


def _whole_unit(items: Sequence[Item], unit: list[int], entries: dict[int, Curated]) -> None:
    """A tool call with its results: a pinned member (or the question) keeps all of it; else a superseded member
    takes the rest with it. (Sending one part alone breaks the call's pairing.)"""
    fixed = [p for p in unit if p in entries]
    if not fixed or len(unit) == 1:
        return
    keeper = next((p for p in fixed if entries[p].verdict in (Verdict.PINNED, Verdict.QUESTION)), None)
    if keeper is None and any(p not in entries and items[p].trusted for p in unit):
        # a trusted member is never taken along by another's supersession (an untrusted result's key would remove
        # the user's own correction with it): the unit is ranked whole, as if none of it were superseded
        for p in fixed:
            if entries[p].verdict is Verdict.SUPERSEDED:
                del entries[p]
        return
    for p in unit:
        if keeper is not None and (p not in entries or entries[p].verdict is Verdict.SUPERSEDED):
            entries[p] = Curated(items[p].index, Verdict.KEPT, items[p].tokens,
                                 reason=f"sent with #{items[keeper].index}, its tool call's unit")
        elif keeper is None and p not in entries:
            by = entries[fixed[0]]
            entries[p] = Curated(items[p].index, Verdict.SUPERSEDED, items[p].tokens, superseded_by=by.superseded_by,
                                 reason=f"its tool call's unit went with #{items[fixed[0]].index} ({by.reason})")


def _drop_orphans(items: Sequence[Item], entries: dict[int, Curated]) -> None:
    """A reply whose question was left out goes too (as under drop-oldest): templates that require turns to
    alternate refuse a conversation that opens with a reply or answers nothing."""
    unit_of = {p: unit for unit in units(items) for p in unit}
    asked_kept = True
    for p, item in enumerate(items):
        entry = entries[p]
        if item.role == "user":
            asked_kept = entry.verdict not in LEFT_OUT
        elif item.role == "assistant" and not asked_kept and entry.verdict in (Verdict.KEPT, Verdict.TRIMMED):
            for q in unit_of[p]:  # the reply with its tool results
                entries[q] = Curated(items[q].index, Verdict.DROPPED, items[q].tokens, entries[q].score, ORPHAN)


def _unit_scores(items: Sequence[Item], ranked: list[list[int]], query: str) -> dict[int, float]:
    flat = [p for unit in ranked for p in unit]
    by_position = dict(zip(flat, scores(query, [items[p].text for p in flat])))
    return {id(unit): round(max(by_position[p] * items[p].weight for p in unit), 4) for unit in ranked}


def _trim(items: Sequence[Item], p: int, query: str, trim_over: int, count: Callable[[str], int],
          cuts: dict[int, tuple[str, tuple[tuple[int, int], ...], int]]) -> int:
    """The item's cost as it would be sent: a long item cut to its relevant lines (noted in `cuts`)."""
    item = items[p]
    if item.tokens <= trim_over or not item.trimmable:
        return item.tokens
    cut = trimmed(item.text, query)
    if cut is None:
        return item.tokens
    cost = item.tokens - count(item.text) + count(cut[0])
    cuts[p] = (cut[0], cut[1], cost)
    return cost


def _packed_entry(item: Item, p: int, fits: bool, score: float, room: int | None, cost: int,
                  cuts: dict[int, tuple[str, tuple[tuple[int, int], ...], int]]) -> Curated:
    if not fits:
        return Curated(item.index, Verdict.DROPPED, item.tokens, score,
                       f"did not fit: its unit needs {cost} tokens, {room} left (score {score:g})")
    if p in cuts:
        text, ranges, trimmed_cost = cuts[p]
        shown = ", ".join(f"{a}-{b}" if a != b else str(a) for a, b in ranges)
        return Curated(item.index, Verdict.TRIMMED, trimmed_cost, score,
                       f"trimmed to lines {shown} of {item.text.count(chr(10)) + 1} (score {score:g})",
                       lines_kept=ranges)
    return Curated(item.index, Verdict.KEPT, item.tokens, score, f"kept (score {score:g})")
