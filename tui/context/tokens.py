"""Token counting: tiktoken encodings shipped with the package, Hugging Face tokenizer.json files.

Counting rule: a control token written by the template counts as one token; everything else,
content included, is encoded as plain text. The document is cut at the template's control tokens
into segments; each segment is encoded once and cached by its text, so editing one message
re-encodes only the segment that holds it. Tokens are attributed to the span they start in.
"""

from __future__ import annotations

import re
import threading
from array import array
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from itertools import accumulate
from pathlib import Path
from typing import Protocol

from .document import Document
from .identity import MODEL_FILE, SHIPPED, Identity
from .pieces import cuts_at_spaces, pieced_starts
from .registry import family_for_vocabulary, tokenizer_for_model  # noqa: F401 - re-exported

ENCODING_SHA256 = {
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
}
# Pre-tokenisation patterns and special tokens of tiktoken's published encodings.
O200K_PATTERN = "|".join([
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""\p{N}{1,3}""", r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""", r"""\s*[\r\n]+""", r"""\s+(?!\S)""", r"""\s+""",
])
CL100K_PATTERN = (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
                  r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s""")
QWEN2_PATTERN = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
                 r"""|\s*[\r\n]+|\s+(?!\S)|\s+""")
HARMONY_SPECIALS = {"<|startoftext|>": 199998, "<|endoftext|>": 199999, "<|return|>": 200002,
                    "<|constrain|>": 200003, "<|channel|>": 200005, "<|start|>": 200006, "<|end|>": 200007,
                    "<|message|>": 200008, "<|call|>": 200012}
# o200k_harmony's reserved slots: control tokens too (a server given the model's vocabulary reads them as such),
# listed for fence escaping only, so counting keeps its short list.
HARMONY_RESERVED = frozenset(f"<|reserved_{i}|>" for i in (200000, 200001, 200004, 200009, 200010, 200011,
                                                            *range(200013, 201088)))
ENCODINGS = {
    "o200k_base": ("o200k_base", O200K_PATTERN, {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}),
    "o200k_harmony": ("o200k_base", O200K_PATTERN, {**HARMONY_SPECIALS, "<|endofprompt|>": 200018}),
    "cl100k_base": ("cl100k_base", CL100K_PATTERN, {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258,
                                                    "<|fim_middle|>": 100259, "<|fim_suffix|>": 100260,
                                                    "<|endofprompt|>": 100276}),
}
HF_TOKENIZERS = {"qwen3": "qwen3-tokenizer.json.xz"}

class TokenizerNotFound(ValueError):
    """An unknown tokenizer name, a missing file, or a corrupted encoding."""


class Tokenizer(Protocol):
    name: str  # for display; what the tokenizer is lies in its `identity` (identity.tokenizer_identity)

    def plain_starts(self, text: str) -> tuple[array, bool]:
        """Start offsets of the tokens of `text` encoded as plain text; the bool says byte offsets."""

    def special_count(self, text: str) -> int:
        """Tokens for a control-token string written by the template (1 if the tokenizer knows it)."""

    def specials(self) -> set[str]:
        """Control-token strings this tokenizer knows by itself."""


def _read_package(subdir: str, name: str) -> bytes:
    return resources.files("tui.context").joinpath(subdir, name).read_bytes()


def encoding_digest(name: str) -> str:
    """The hash of a shipped encoding's vocabulary: its ranks file's published sha256, its pattern and specials."""
    import hashlib, json  # noqa: E401
    file, pattern, specials = ENCODINGS[name]
    text = json.dumps([ENCODING_SHA256[file], pattern, sorted(specials.items())], ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def vocabulary_identity(name: str, source: str, digest: str) -> Identity:
    """A loaded tokenizer's identity: its family is the one whose vocabulary has this hash, whatever its name."""
    return Identity(family_for_vocabulary(digest), source, digest, name)


def load_ranks(encoding_file: str) -> dict[bytes, int]:
    """BPE ranks from the shipped gzip file, checked against tiktoken's published sha256."""
    import base64, gzip, hashlib  # noqa: E401 - only when an encoding loads, off the start-up path
    raw = gzip.decompress(_read_package("encodings", f"{encoding_file}.tiktoken.gz"))
    if hashlib.sha256(raw).hexdigest() != ENCODING_SHA256[encoding_file]:
        raise TokenizerNotFound(f"{encoding_file}: the shipped encoding file is corrupted (sha256 mismatch)")
    ranks = {}
    for line in raw.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


class TiktokenTokenizer:
    cuts_at_spaces = True  # its split patterns start a piece at a space after a non-space (see _bpe_pieces)

    def __init__(self, name: str):
        import tiktoken  # deferred: loading an encoding costs ~0.3 s

        file, pattern, specials = ENCODINGS[name]
        self.name = name
        self.identity = vocabulary_identity(name, SHIPPED, encoding_digest(name))  # ranks checked below
        self._specials = specials
        self._all = frozenset(specials) | (HARMONY_RESERVED if name == "o200k_harmony" else frozenset())
        self._encoding = tiktoken.Encoding(name=name, pat_str=pattern, mergeable_ranks=load_ranks(file),
                                           special_tokens=specials)

    def plain_starts(self, text: str) -> tuple[array, bool]:
        starts, offset = array("q"), 0
        for piece in _bpe_pieces(text):  # tiktoken's regex overflows its stack on a megabyte of spaces
            tokens = self._encoding.encode_ordinary(piece)
            lengths = list(map(len, self._encoding.decode_tokens_bytes(tokens)))
            starts.extend(accumulate(lengths[:-1], initial=offset) if tokens else ())
            offset += sum(lengths)
        return starts, True

    def plain_ids(self, text: str) -> list[int]:
        return [t for piece in _bpe_pieces(text) for t in self._encoding.encode_ordinary(piece)]

    def special_count(self, text: str) -> int:
        return 1  # the model's own tokenizer has it as one control token; the estimate says so

    def specials(self) -> set[str]:
        return set(self._specials)

    def all_specials(self) -> frozenset[str]:
        """Every special token of the published encoding, reserved slots included."""
        return self._all

    def encode_whole(self, text: str) -> int:
        return len(self._encoding.encode(text, allowed_special="all"))


BPE_PIECE = 1 << 16  # characters handed to tiktoken at once
_SAFE_CUT = re.compile(r"(?<=\S) ")  # a space after a non-space: every split pattern starts a piece there


def _bpe_pieces(text: str) -> list[str]:
    """`text` in pieces of at most ~BPE_PIECE characters, cut where the split pattern cuts anyway,
    so the tokens are the same; a run with no such place (a megabyte of spaces) is cut where it must."""
    pieces, start = [], 0
    while len(text) - start > BPE_PIECE:
        cut = None
        for cut in _SAFE_CUT.finditer(text, start + BPE_PIECE // 2, start + BPE_PIECE):
            pass
        end = cut.start() if cut else start + BPE_PIECE
        pieces.append(text[start:end])
        start = end
    pieces.append(text[start:])
    return pieces


class HFTokenizer:
    def __init__(self, name: str, json_text: str, identity: Identity | None = None):
        from tokenizers import Tokenizer as RawTokenizer

        self.name = name
        self.identity = identity or vocabulary_identity(name, MODEL_FILE, _sha256(json_text.encode("utf-8")))
        self._tokenizer = RawTokenizer.from_str(json_text)
        self._lock = threading.Lock()  # the special-token switch is shared state
        self._added = frozenset(t.content for t in self._tokenizer.get_added_tokens_decoder().values())
        self.cuts_at_spaces = cuts_at_spaces(self._tokenizer, frozenset({QWEN2_PATTERN, CL100K_PATTERN,
                                                                          O200K_PATTERN}))

    def _encode(self, text: str, as_plain: bool):
        with self._lock:
            self._tokenizer.encode_special_tokens = as_plain
            return self._tokenizer.encode(text, add_special_tokens=False)

    def plain_starts(self, text: str) -> tuple[array, bool]:
        # content is text: never turn it into control tokens
        return array("q", (start for start, _ in self._encode(text, True).offsets)), False

    def special_count(self, text: str) -> int:
        return len(self._encode(text, False).ids)

    def plain_ids(self, text: str) -> list[int]:
        return list(self._encode(text, True).ids)

    def specials(self) -> set[str]:
        return set(self._added)

    def all_specials(self) -> frozenset[str]:
        """Every added token, special or not (llama.cpp reads both kinds as single tokens)."""
        return self._added

    def encode_whole(self, text: str) -> int:
        return len(self._encode(text, False).ids)


_LOCK = threading.Lock()


def _sha256(data: bytes) -> str:
    import hashlib
    return hashlib.sha256(data).hexdigest()


@lru_cache(maxsize=8)
def _cached_tokenizer(spec: str) -> Tokenizer:
    if spec in ENCODINGS:
        return TiktokenTokenizer(spec)
    import lzma

    if spec in HF_TOKENIZERS:
        data = lzma.decompress(_read_package("tokenizer_files", HF_TOKENIZERS[spec]))
        return HFTokenizer(spec, data.decode("utf-8"), vocabulary_identity(spec, SHIPPED, _sha256(data)))
    path = Path(spec).expanduser()
    if not path.exists():
        raise TokenizerNotFound(f"unknown tokenizer {spec!r}; built-in: {', '.join([*ENCODINGS, *HF_TOKENIZERS])}"
                                " or a path to a tokenizer.json")
    if path.is_dir():
        path = path / "tokenizer.json"
    try:
        data = path.read_bytes()
        data = lzma.decompress(data) if path.suffix == ".xz" else data
        # the vocabulary's hash, not the file's name, says whose tokenizer this is
        return HFTokenizer(str(path), data.decode("utf-8"), vocabulary_identity(str(path), MODEL_FILE, _sha256(data)))
    except Exception as exc:  # noqa: BLE001 - any unreadable file is reported the same way
        raise TokenizerNotFound(f"cannot read tokenizer {spec}: {exc}") from None


def get_tokenizer(spec: str) -> Tokenizer:
    """A tokenizer by name (o200k_base, o200k_harmony, cl100k_base, qwen3) or tokenizer.json path."""
    with _LOCK:
        return _cached_tokenizer(spec)


def all_special_tokens(tokenizer: Tokenizer) -> frozenset[str]:
    """Every special or added token string the tokenizer has: what fences must escape.

    A tokenizer without `all_specials` (the server's, a test double) gives its `specials()`.
    """
    full = getattr(tokenizer, "all_specials", None)
    return full() if callable(full) else frozenset(tokenizer.specials())


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

    entries: dict[str, tuple[array, bool]] = field(default_factory=dict)
    limit: int = 20_000
    pieces: dict[str, tuple[array, bool, int]] = field(default_factory=dict)

    def starts(self, tokenizer: Tokenizer, text: str) -> tuple[array, bool]:
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
def _special_regex(strings: frozenset[str]) -> re.Pattern | None:
    ordered = sorted((s for s in strings if s), key=len, reverse=True)
    return re.compile("|".join(map(re.escape, ordered))) if ordered else None


def _cuts(document: Document, pattern: re.Pattern | None, content: bool = False) -> list[tuple[int, int, int]]:
    """(start, end, span index) of each control token inside marker spans (and in content, when the
    server parses control strings there: llama.cpp tokenizes the whole prompt with specials parsed)."""
    cuts = []
    if pattern is None:
        return cuts
    for index, span in enumerate(document.spans):
        if span.kind == "marker" or content:
            for match in pattern.finditer(document.text, span.start, span.end):
                cuts.append((match.start(), match.end(), index))
    return cuts


def count_tokens(document: Document, tokenizer: Tokenizer, template_specials: list[str],
                 cache: SegmentCache | None = None, exact: bool = False,
                 content_specials: bool = False) -> TokenCounts:
    """Count the document's tokens per span (written into span.tokens), per role and per kind.

    `content_specials`: control strings inside message text count as the control tokens they are
    (as a server that parses them there counts them), not as plain text."""
    cache = cache if cache is not None else SegmentCache()
    specials = set(template_specials) | tokenizer.specials()
    cuts = _cuts(document, _special_regex(frozenset(specials)), content_specials)
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
        span.tokens = count
        role = document.role_of(span)
        by_role[role] = by_role.get(role, 0) + count
        by_kind[span.kind] = by_kind.get(span.kind, 0) + count
    in_content = sum(1 for _start, _end, index in cuts if document.spans[index].kind != "marker")
    return TokenCounts(sum(per_span), by_role, by_kind, exact, tokenizer.name, in_content)


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
    pieces: list[tuple[int, int, array | None, bool, int]] = field(default_factory=list)  # start, end, starts, bytes, n
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
    for cut_start, cut_end, span_index in [*_cuts(document, _special_regex(frozenset(specials))),
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
