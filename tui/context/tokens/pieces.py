"""Encoding a long text in pieces, each cached by its text, with the same tokens as encoding it whole.

A byte-level BPE tokenizer first splits text with a regular expression (pre-tokens) and merges
only inside a pre-token. Under the split patterns named in tokens.py, a space that follows a
non-space always starts a pre-token, so cutting there changes no token. Pieces are cut where the
text itself marks a place (a space after punctuation), so an edit changes the piece it falls in
and the pieces after it are found again, cached: a keystroke in a megabyte draft encodes ~1 KB.
"""

from __future__ import annotations

import json
import re
from array import array
from typing import TYPE_CHECKING, Protocol, TypeAlias

if TYPE_CHECKING:
    from tokenizers import Tokenizer as RawTokenizer

PIECE = 1 << 12  # characters in one piece, at most (about a quarter of that at least)
_SAFE_CUT = re.compile(r"(?<=\S) ")  # a space after a non-space: every such split pattern starts a piece there
_STABLE_CUT = re.compile(r"(?<=[.,;:!?)\]}]) ")  # a safe cut the text itself marks: found again after an edit

# Token start offsets in a text (characters, or UTF-8 bytes where a tokenizer says so), typecode "q".
TokenStarts: TypeAlias = "array[int]"
# A piece's cached encoding: its token starts, whether they are byte offsets, and its length in those units.
PieceEntry: TypeAlias = "tuple[array[int], bool, int]"


class PlainEncoder(Protocol):
    """What piecewise encoding needs of a tokenizer (every Tokenizer of tokenizers.py has it)."""

    def plain_starts(self, text: str) -> tuple[TokenStarts, bool]: ...


def stable_pieces(text: str, size: int = PIECE) -> list[str]:
    """`text` in pieces of at most `size` characters, cut at safe places chosen by the text near them."""
    pieces: list[str] = []
    start = 0
    while len(text) - start > size:
        cut = _STABLE_CUT.search(text, start + size // 4, start + size)
        if cut is None:  # no punctuation: the last safe place in the window (an edit may move later cuts)
            cut = max(_SAFE_CUT.finditer(text, start + size // 2, start + size), key=lambda m: m.start(), default=None)
        end = cut.start() if cut else start + size  # no safe place at all (a run of spaces): cut where it must
        pieces.append(text[start:end])
        start = end
    pieces.append(text[start:])
    return pieces


def pieced_starts(tokenizer: PlainEncoder, text: str, cache: dict[str, PieceEntry],
                  limit: int) -> tuple[TokenStarts, bool]:
    """Token starts of `text` (as `tokenizer.plain_starts` gives them), piece by piece through `cache`."""
    starts, offset, in_bytes = array("q"), 0, False
    for piece in stable_pieces(text):
        hit = cache.get(piece)
        if hit is None:
            piece_starts, in_bytes = tokenizer.plain_starts(piece)
            hit = (piece_starts, in_bytes, len(piece.encode()) if in_bytes else len(piece))
            if len(cache) >= limit:
                cache.clear()
            cache[piece] = hit
        piece_starts, in_bytes, size = hit
        starts.extend(map(offset.__add__, piece_starts) if offset else piece_starts)
        offset += size
    return starts, in_bytes


def cuts_at_spaces(raw: RawTokenizer, known_patterns: frozenset[str]) -> bool:
    """Whether a tokenizer.json may be cut at spaces: NFC or no normaliser, a known split pattern
    (isolated), then byte-level without a prefix space. Decided from the file's own pipeline."""
    try:
        normalizer = json.loads(raw.normalizer.__getstate__()) if raw.normalizer is not None else None
        pre = json.loads(raw.pre_tokenizer.__getstate__()) if raw.pre_tokenizer is not None else {}
    except Exception:  # noqa: BLE001 - anything unexpected: encode whole texts, as always
        return False
    if normalizer not in (None, {"type": "NFC"}) or pre.get("type") != "Sequence":
        return False
    steps = pre.get("pretokenizers") or []
    return (len(steps) == 2 and steps[0].get("type") == "Split" and steps[0].get("behavior") == "Isolated"
            and not steps[0].get("invert") and (steps[0].get("pattern") or {}).get("Regex") in known_patterns
            and steps[1].get("type") == "ByteLevel" and not steps[1].get("add_prefix_space"))
