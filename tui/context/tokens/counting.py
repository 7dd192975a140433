"""Token counting over a rendered document (the tokenizers themselves are in tokenizers.py).

Counting rule: a control token written by the template counts as one token; everything else,
content included, is encoded as plain text. The document is cut at the template's control tokens
into segments; each segment is encoded once and cached by its text, so editing one message
re-encodes only the segment that holds it. Tokens are attributed to the span they start in.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from functools import lru_cache

from tui.context.document import Document, Span
from tui.context.tokens.pieces import PieceEntry, TokenStarts, pieced_starts
# Re-exported (`as` the same name): callers import them from here.
from tui.context.tokens.tokenizers import (
    BPE_PIECE as BPE_PIECE, CL100K_PATTERN as CL100K_PATTERN, ENCODINGS as ENCODINGS,
    ENCODING_SHA256 as ENCODING_SHA256, HARMONY_RESERVED as HARMONY_RESERVED, HARMONY_SPECIALS as HARMONY_SPECIALS,
    HFTokenizer as HFTokenizer, HF_TOKENIZERS as HF_TOKENIZERS, O200K_PATTERN as O200K_PATTERN,
    QWEN2_PATTERN as QWEN2_PATTERN, TiktokenTokenizer as TiktokenTokenizer, Tokenizer as Tokenizer,
    TokenizerNotFound as TokenizerNotFound, all_special_tokens as all_special_tokens,
    encoding_digest as encoding_digest, get_tokenizer as get_tokenizer, load_ranks as load_ranks,
    vocabulary_identity as vocabulary_identity)


@dataclass
class TokenCounts:
    total: int
    by_role: dict[str, int]
    by_kind: dict[str, int]
    exact: bool
    tokenizer: str
    content_controls: int = 0  # control strings in message text counted as control tokens (content_specials)


@dataclass
class SegmentCache:
    """Token start offsets per segment text; shared across recounts so edits re-encode one segment.

    A long segment (a big draft, a pasted document) is encoded in pieces, each cached by its text,
    when the tokenizer's split pattern makes that exact: a keystroke re-encodes one piece, not a megabyte.
    """

    entries: dict[str, tuple[TokenStarts, bool]] = field(default_factory=dict)
    limit: int = 20_000
    pieces: dict[str, PieceEntry] = field(default_factory=dict)

    def starts(self, tokenizer: Tokenizer, text: str) -> tuple[TokenStarts, bool]:
        hit = self.entries.get(text)
        if hit is None:
            if len(text) > LONG_SEGMENT and getattr(tokenizer, "cuts_at_spaces", False):
                hit = pieced_starts(tokenizer, text, self.pieces, self.limit)
            else:
                hit = tokenizer.plain_starts(text)
            if len(self.entries) >= self.limit:
                self.entries.clear()
            self.entries[text] = hit
        return hit

LONG_SEGMENT = 1 << 15  # characters: a longer segment is encoded piece by piece (pieces.py)


@lru_cache(maxsize=32)
def special_pattern(strings: frozenset[str]) -> re.Pattern[str] | None:
    ordered = sorted((s for s in strings if s), key=len, reverse=True)
    return re.compile("|".join(map(re.escape, ordered))) if ordered else None


def _cuts(document: Document, pattern: re.Pattern[str] | None, content: bool = False) -> list[tuple[int, int, int]]:
    """(start, end, span index) of each control token inside marker spans (and in content, when the
    server parses control strings there: llama.cpp tokenizes the whole prompt with specials parsed)."""
    cuts: list[tuple[int, int, int]] = []
    if pattern is None:
        return cuts
    for index, span in enumerate(document.spans):
        if span.kind == "marker" or content:
            for match in pattern.finditer(document.text, span.start, span.end):
                cuts.append((match.start(), match.end(), index))
    return cuts


def count_tokens(document: Document, tokenizer: Tokenizer, template_specials: list[str],
                 cache: SegmentCache | None = None, content_specials: bool = False) -> tuple[Document, TokenCounts]:
    """The document with each span's tokens, and its counts per role and per kind. The document given is left
    as it was (a view may still show it): the counted one has spans of its own. Whether the counts are exact is
    the caller's to say (it knows the template and the model): they come back as not exact.

    `content_specials`: control strings inside message text count as the control tokens they are
    (as a server that parses them there counts them), not as plain text."""
    cache = cache if cache is not None else SegmentCache()
    specials = set(template_specials) | tokenizer.specials()
    cuts = _cuts(document, special_pattern(frozenset(specials)), content_specials)
    per_span = [0] * len(document.spans)
    bounds = [span.end for span in document.spans]
    position = 0
    for cut_start, cut_end, span_index in [*cuts, (len(document.text), len(document.text), -1)]:
        if cut_start > position:
            _count_segment(document, bounds, position, cut_start, tokenizer, cache, per_span)
        if span_index >= 0:
            per_span[span_index] += tokenizer.special_count(document.text[cut_start:cut_end])
        position = cut_end
    by_role: dict[str, int] = {}
    by_kind: dict[str, int] = {}
    for span, count in zip(document.spans, per_span):
        role = document.role_of(span)
        by_role[role] = by_role.get(role, 0) + count
        by_kind[span.kind] = by_kind.get(span.kind, 0) + count
    in_content = sum(1 for _start, _end, index in cuts if document.spans[index].kind != "marker")
    counted = Document(document.text, [Span(span.start, span.end, span.message, span.kind, span.transformed, count)
                                       for span, count in zip(document.spans, per_span)], document.roles)
    return counted, TokenCounts(sum(per_span), by_role, by_kind, False, tokenizer.name, in_content)


def _count_segment(document: Document, bounds: list[int], start: int, end: int, tokenizer: Tokenizer,
                   cache: SegmentCache, per_span: list[int]) -> None:
    segment = document.text[start:end]
    starts, in_bytes = cache.starts(tokenizer, segment)
    index = bisect_left(bounds, start + 1)  # first span that ends after `start`
    taken = 0
    cursor, byte_offset = start, 0
    while index < len(bounds) and taken < len(starts):
        span_end = min(bounds[index], end)
        if in_bytes:
            byte_offset += len(document.text[cursor:span_end].encode("utf-8"))
            limit = byte_offset
        else:
            limit = span_end - start
        cursor = span_end
        upto = bisect_left(starts, limit) if span_end < end else len(starts)
        per_span[index] += upto - taken
        taken = upto
        if bounds[index] >= end:
            break
        index += 1


@dataclass
class TokenIndex:
    """Where a document's tokens are, kept per segment (not one entry per token, so it stays small).

    Each piece is a run of plain text with its token start offsets, or a control token.
    """

    text: str
    # start, end, token starts (None: a control token), whether they are byte offsets, tokens
    pieces: list[tuple[int, int, TokenStarts | None, bool, int]] = field(default_factory=list)
    before: list[int] = field(default_factory=list)  # tokens in the pieces before each piece

    @property
    def total(self) -> int:
        return self.before[-1] if self.before else 0

    def tokens_before(self, boundary: int) -> int:
        """Tokens that end at or before character `boundary` (a token ends where the next begins)."""
        if boundary >= len(self.text):
            return self.total
        index = bisect_left([piece[1] for piece in self.pieces], boundary + 1)  # first piece ending after it
        if index >= len(self.pieces):
            return self.total
        start, _end, starts, in_bytes, _count = self.pieces[index]
        if starts is None or boundary <= start:
            return self.before[index]
        offset = boundary - start
        if in_bytes:
            offset = len(self.text[start:boundary].encode("utf-8"))
        return self.before[index] + max(0, bisect_right(starts, offset) - 1)


def token_index(document: Document, tokenizer: Tokenizer, template_specials: list[str],
                cache: SegmentCache | None = None) -> TokenIndex:
    """The document's tokens by segment, for the cache prefix (segments come from the shared cache)."""
    cache = cache if cache is not None else SegmentCache()
    specials = set(template_specials) | tokenizer.specials()
    index = TokenIndex(document.text)
    position, running = 0, 0
    for cut_start, cut_end, span_index in [*_cuts(document, special_pattern(frozenset(specials))),
                                           (len(document.text), len(document.text), -1)]:
        if cut_start > position:
            starts, in_bytes = cache.starts(tokenizer, document.text[position:cut_start])
            index.pieces.append((position, cut_start, starts, in_bytes, len(starts)))
            index.before.append(running)
            running += len(starts)
        if span_index >= 0:
            count = tokenizer.special_count(document.text[cut_start:cut_end])
            index.pieces.append((cut_start, cut_end, None, False, count))
            index.before.append(running)
            running += count
        position = cut_end
    index.before.append(running)
    return index
