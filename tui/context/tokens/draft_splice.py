"""Typing without re-rendering: replace one message's text in place and recount one segment.

Used per keystroke for the draft (and for in-place edits). It is valid only where the template
copies the message verbatim into a single span; otherwise it returns None and the caller renders
afresh. After a pause the view is refreshed from the spliced document (request.refreshed_after_splice), and
after a longer one (view_updates.FULL_SETTLE) rendered in full, so a template quirk is caught.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import replace

from tui.context.document import Document
from tui.context.tokens.counting import SegmentCache, TokenCounts, Tokenizer, _count_segment, special_pattern


def _content_span(document: Document, message: int) -> int | None:
    found = [i for i, s in enumerate(document.spans) if s.message == message and s.kind == "content"]
    if len(found) != 1 or document.spans[found[0]].transformed:
        return None
    return found[0]


def _cut_before(document: Document, index: int, pattern: re.Pattern[str] | None) -> int:
    """End of the last control token in a marker span before span `index` (or 0)."""
    for i in range(index - 1, -1, -1):
        span = document.spans[i]
        if span.kind == "marker" and pattern is not None:
            ends = [m.end() for m in pattern.finditer(document.text, span.start, span.end)]
            if ends:
                return ends[-1]
    return 0


def _cut_after(document: Document, index: int, pattern: re.Pattern[str] | None) -> int:
    """Start of the first control token in a marker span after span `index` (or the end)."""
    for span in document.spans[index + 1:]:
        if span.kind == "marker" and pattern is not None:
            match = pattern.search(document.text, span.start, span.end)
            if match:
                return match.start()
    return len(document.text)


def _segment_counts(document: Document, start: int, end: int, tokenizer: Tokenizer,
                    cache: SegmentCache) -> dict[int, int]:
    per_span = [0] * len(document.spans)
    bounds = [s.end for s in document.spans]
    if end > start:
        _count_segment(document, bounds, start, end, tokenizer, cache, per_span)
    first = bisect_left(bounds, start + 1)
    return {i: per_span[i] for i in range(first, len(per_span)) if per_span[i]}


def splice_message(document: Document, counts: TokenCounts, message: int, new_text: str,
                   tokenizer: Tokenizer, specials: list[str],
                   cache: SegmentCache) -> tuple[Document, TokenCounts] | None:
    """The document and counts with message `message`'s text replaced, or None if not possible.

    The caller must know that the template copies text verbatim (ChatTemplate.copies_text_verbatim).
    """
    index = _content_span(document, message)
    if index is None or not new_text:  # no span to grow, or one to remove: render afresh
        return None
    pattern = special_pattern(frozenset(specials) | tokenizer.specials())
    old = document.spans[index]
    if pattern is not None and (pattern.search(new_text) or pattern.search(document.text, old.start, old.end)):
        return None  # a control string typed in or taken out: let the full path flag, attribute and count it
    seg_start = _cut_before(document, index, pattern)
    seg_end = _cut_after(document, index, pattern)
    before = _segment_counts(document, seg_start, seg_end, tokenizer, cache)

    delta = len(new_text) - old.length
    text = document.text[:old.start] + new_text + document.text[old.end:]
    spans = document.spans[:index] + [replace(old, end=old.end + delta)]
    spans += [replace(s, start=s.start + delta, end=s.end + delta) for s in document.spans[index + 1:]]
    edited = Document(text, spans, document.roles)
    after = _segment_counts(edited, seg_start, seg_end + delta, tokenizer, cache)

    by_role, by_kind = dict(counts.by_role), dict(counts.by_kind)
    for span_index in set(before) | set(after):
        change = after.get(span_index, 0) - before.get(span_index, 0)
        # a copy: the spans before the edit are the old document's too, and a view may still show that one
        span = spans[span_index] = replace(spans[span_index], tokens=spans[span_index].tokens + change)
        role = edited.role_of(span)
        by_role[role] = by_role.get(role, 0) + change
        by_kind[span.kind] = by_kind.get(span.kind, 0) + change
    total = counts.total + sum(after.values()) - sum(before.values())
    return edited, TokenCounts(total, by_role, by_kind, counts.exact, counts.tokenizer, counts.content_controls)
