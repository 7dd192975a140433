"""Anthropic's prompt cache as Anthropic works: the client's `cache_control` breakpoints (at most 4), each caching
the prompt up to the end of its block when that prompt reaches the model's minimum; writes priced 1.25x (5 minutes)
or 2x (1 hour) the input price, reads 0.1x. The breakpoints come from the Messages body (tui/context/formats)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tui.context.cache.rules import RULES, minimum_for as rule_minimum

MAX_BREAKPOINTS = 4
WRITE_PRICE = {"5m": 1.25, "1h": 2.0}  # times the input price
READ_PRICE = 0.1

def minimum_for(model: str) -> int:
    """The shortest prompt a breakpoint caches for this model (the anthropic cache rule's table): shorter, nothing."""
    return rule_minimum(RULES["anthropic"], model)


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


def drawn_marks(parsed: Any, view: Any) -> list[tuple[int, str]]:
    """Each breakpoint as a line drawn on the document where its block ends, with what it caches."""
    minimum = minimum_for(getattr(parsed, "model", ""))
    out = []
    for mark in place(parsed, view):
        verdict = "" if mark.caches else f" — caches nothing: the minimum for this model is {minimum:,}"
        out.append((mark.position, f"▲ cache_control breakpoint ({mark.where}, {mark.ttl}): {mark.tokens:,} tokens "
                                   f"above{verdict}"))
    return out


def reported_notes(usage: Any, predicted: int | None, diagnostics: Any) -> list[str]:
    """What the API reported of its cache beside what was predicted, and its own word on a miss."""
    if not isinstance(usage, dict) or not any(key in usage for key in ("cache_read_input_tokens",
                                                                        "cache_creation_input_tokens")):
        return []
    read, written = usage.get("cache_read_input_tokens"), usage.get("cache_creation_input_tokens")
    said = f"reported: cache_read_input_tokens {read if isinstance(read, int) else '—'} · cache_creation_input_tokens "
    said += f"{written if isinstance(written, int) else '—'}"
    if predicted is not None:
        said += f" (predicted {predicted:,} read)"
    notes = [said]
    reason = diagnostics.get("cache_miss_reason") if isinstance(diagnostics, dict) else None
    if isinstance(reason, dict) and reason.get("type"):
        missed = reason.get("cache_missed_input_tokens")
        notes.append(f"the API's cache_miss_reason: {str(reason['type'])[:64]}"
                     + (f" ({missed:,} tokens missed)" if isinstance(missed, int) else ""))
    return notes


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
