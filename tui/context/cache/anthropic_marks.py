"""Anthropic's prompt cache as Anthropic works: the client's `cache_control` breakpoints (at most 4), each caching
the prompt up to the end of its block when that prompt reaches the model's minimum; writes priced 1.25x (5 minutes)
or 2x (1 hour) the input price, reads 0.1x. The breakpoints come from the Messages body (tui/context/formats)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MAX_BREAKPOINTS = 4
WRITE_PRICE = {"5m": 1.25, "1h": 2.0}  # times the input price
READ_PRICE = 0.1

# The shortest prompt a breakpoint caches, by model (Anthropic's prompt-caching page): shorter, it caches nothing.
MINIMUMS = (("claude-opus-4-5", 4096), ("claude-haiku-4-5", 4096), ("claude-3-5-haiku", 2048),
            ("claude-3-haiku", 2048), ("claude-haiku", 2048), ("claude-opus", 1024), ("claude-sonnet", 1024),
            ("claude-3", 1024), ("claude", 1024))
DEFAULT_MINIMUM = 1024


def minimum_for(model: str) -> int:
    name = model.lower().split("/")[-1]
    for prefix, tokens in MINIMUMS:
        if name.startswith(prefix):
            return tokens
    return DEFAULT_MINIMUM


@dataclass(frozen=True)
class Mark:
    """A breakpoint placed on the document: where its block ends, and the tokens of the prompt up to there."""

    where: str
    ttl: str
    position: int  # characters of the document up to the end of its block
    tokens: int  # the prompt's tokens up to there (what it would write to the cache)
    caches: bool  # the prompt up to there reaches the model's minimum


def place(parsed: Any, view: Any) -> list[Mark]:
    """Each breakpoint of a Messages body at its place in the rendered document, with its prefix's tokens."""
    document = view.document
    ends: dict[int, tuple[int, int]] = {}  # parsed message index -> (first content character, last)
    for span in document.spans:
        if span.message is None or span.kind == "marker":
            continue
        index = view.origin[span.message] if span.message < len(view.origin) else -1
        start, end = ends.get(index, (span.start, span.end))
        ends[index] = (min(start, span.start), max(end, span.end))
    marks = []
    minimum = minimum_for(getattr(parsed, "model", ""))
    tools = sum(turn.counts.get("tool_schema", 0) for turn in view.hidden.turns)
    for point in parsed.breakpoints:
        if point.message < 0:  # the tool definitions: Anthropic caches them first, whatever the template's order
            position = min((start for start, _end in ends.values()), default=0)
            tokens = tokens_before(view, position) + tools
        else:
            start, end = ends.get(point.message, (0, 0))
            position = end if point.offset < 0 else min(end, start + point.offset)
            tokens = tokens_before(view, position)
            if point.message == 0 and parsed.messages[0].get("role") == "system":
                tokens += tools  # the tools come before the system prompt in Anthropic's cache order
        marks.append(Mark(point.where, point.ttl, position, tokens, tokens >= minimum))
    return marks


def tokens_before(view: Any, position: int) -> int:
    """The document's tokens that end at or before `position` (spans cut at it count their share)."""
    total = 0
    for span in view.document.spans:
        if span.end <= position:
            total += span.tokens
        elif span.start < position and span.end > span.start:
            total += span.tokens * (position - span.start) // (span.end - span.start)
    return total


def breakpoint_notes(parsed: Any, view: Any, model: str) -> list[str]:
    if not parsed.breakpoints:
        return []
    minimum = minimum_for(model)
    marks = place(parsed, view)
    notes = [f"cache_control breakpoints: {len(marks)} ({', '.join(f'{m.where} ({m.ttl}, {m.tokens:,} tokens)' for m in marks[:6])}"
             f"{', …' if len(marks) > 6 else ''}); writes cost 1.25x the input price (5m) or 2x (1h), reads 0.1x"]
    if len(marks) > MAX_BREAKPOINTS:
        notes.append(f"{len(marks)} cache_control breakpoints: Anthropic takes at most {MAX_BREAKPOINTS} and refuses "
                     "this request")
    for mark in marks:
        if not mark.caches:
            notes.append(f"this breakpoint caches nothing: {mark.tokens:,} tokens, the minimum for this model is "
                         f"{minimum:,} ({mark.where})")
    return notes
