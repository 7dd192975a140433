"""Tokenizers: tiktoken's encodings shipped with the package and Hugging Face tokenizer.json files, loaded
once per spec (thread-safe) and checked against their published digests. Counting is in tokens.py."""

from __future__ import annotations

import os
import re
import stat
import threading
from array import array
from functools import lru_cache
from importlib import resources
from itertools import accumulate
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from tui.context.untrusted.outside_files import read_bounded
from tui.context.families.identity import MODEL_FILE, SHIPPED, Identity, IdentitySource
from tui.context.tokens.pieces import TokenStarts, cuts_at_spaces
from tui.context.families.registry import family_for_vocabulary

if TYPE_CHECKING:
    from tokenizers import Encoding

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
MAX_TOKENIZER_FILE = 256 * 1024 * 1024  # a tokenizer.json (large vocabularies are some tens of MB)
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

    def plain_starts(self, text: str) -> tuple[TokenStarts, bool]:
        """Start offsets of the tokens of `text` encoded as plain text; the bool says byte offsets."""

    def special_count(self, text: str) -> int:
        """Tokens for a control-token string written by the template (1 if the tokenizer knows it)."""

    def specials(self) -> set[str]:
        """Control-token strings this tokenizer knows by itself."""


def _read_package(subdir: str, name: str) -> bytes:
    return resources.files("tui.context.tokens").joinpath(subdir, name).read_bytes()


def encoding_digest(name: str) -> str:
    """The hash of a shipped encoding's vocabulary: its ranks file's published sha256, its pattern and specials."""
    import hashlib, json  # noqa: E401
    file, pattern, specials = ENCODINGS[name]
    text = json.dumps([ENCODING_SHA256[file], pattern, sorted(specials.items())], ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def vocabulary_identity(name: str, source: IdentitySource, digest: str) -> Identity:
    """A loaded tokenizer's identity: its family is the one whose vocabulary has this hash, whatever its name."""
    return Identity(family_for_vocabulary(digest), source, digest, name)


def load_ranks(encoding_file: str) -> dict[bytes, int]:
    """BPE ranks from the shipped gzip file, checked against tiktoken's published sha256."""
    import base64, gzip, hashlib  # noqa: E401 - only when an encoding loads, off the start-up path
    raw = gzip.decompress(_read_package("encodings", f"{encoding_file}.tiktoken.gz"))
    if hashlib.sha256(raw).hexdigest() != ENCODING_SHA256[encoding_file]:
        raise TokenizerNotFound(f"{encoding_file}: the shipped encoding file is corrupted (sha256 mismatch)")
    ranks: dict[bytes, int] = {}
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

    def plain_starts(self, text: str) -> tuple[TokenStarts, bool]:
        starts: TokenStarts = array("q")
        offset = 0
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
    pieces: list[str] = []
    start = 0
    while len(text) - start > BPE_PIECE:
        cut = max(_SAFE_CUT.finditer(text, start + BPE_PIECE // 2, start + BPE_PIECE), key=lambda m: m.start(),
                  default=None)  # the last safe place in the window
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
        self._special_counts: dict[str, int] = {}  # a control string's tokens (a document has thousands of them)
        self._added = frozenset(t.content for t in self._tokenizer.get_added_tokens_decoder().values())
        self.cuts_at_spaces = cuts_at_spaces(self._tokenizer, frozenset({QWEN2_PATTERN, CL100K_PATTERN,
                                                                          O200K_PATTERN}))

    def _encode(self, text: str, as_plain: bool) -> Encoding:
        with self._lock:
            self._tokenizer.encode_special_tokens = as_plain
            return self._tokenizer.encode(text, add_special_tokens=False)

    def plain_starts(self, text: str) -> tuple[TokenStarts, bool]:
        # content is text: never turn it into control tokens
        return array("q", (start for start, _ in self._encode(text, True).offsets)), False

    def special_count(self, text: str) -> int:
        count = self._special_counts.get(text)
        if count is None:
            count = len(self._encode(text, False).ids)
            if len(self._special_counts) < 4096:  # (the control strings a template writes are few)
                self._special_counts[text] = count
        return count

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
def _cached_tokenizer(spec: str) -> TiktokenTokenizer | HFTokenizer:
    if spec in ENCODINGS:
        return TiktokenTokenizer(spec)
    import lzma

    if spec in HF_TOKENIZERS:
        data = lzma.decompress(_read_package("tokenizer_files", HF_TOKENIZERS[spec]))
        return HFTokenizer(spec, data.decode("utf-8"), vocabulary_identity(spec, SHIPPED, _sha256(data)))
    path = tokenizer_file(spec)
    try:
        data = read_bounded(path, MAX_TOKENIZER_FILE)  # a regular file only: a FIFO is refused, not waited on
        data = lzma.LZMADecompressor().decompress(data, MAX_TOKENIZER_FILE) if path.suffix == ".xz" else data
        # the vocabulary's hash, not the file's name, says whose tokenizer this is
        return HFTokenizer(str(path), data.decode("utf-8"), vocabulary_identity(str(path), MODEL_FILE, _sha256(data)))
    except Exception as exc:  # noqa: BLE001 - any unreadable file is reported the same way
        raise TokenizerNotFound(f"cannot read tokenizer {spec}: {exc}") from None


def tokenizer_file(spec: str) -> Path:
    """The tokenizer.json a path names (a folder: the one in it). Looking at a path can fail too (a folder the user
    may not enter: permission denied on the look itself): said as the read's failure would be, never a traceback."""
    path = Path(spec).expanduser()
    try:
        found = os.stat(path)
    except FileNotFoundError:
        raise TokenizerNotFound(f"unknown tokenizer {spec!r}; built-in: {', '.join([*ENCODINGS, *HF_TOKENIZERS])}"
                                " or a path to a tokenizer.json") from None
    except PermissionError:
        raise TokenizerNotFound(f"cannot read tokenizer {spec}: permission denied (a folder on its path may not be "
                                "entered)") from None
    except (OSError, ValueError) as exc:  # a name too long, a loop of links, a NUL byte
        raise TokenizerNotFound(f"cannot read tokenizer {spec!r}: {getattr(exc, 'strerror', None) or exc}") from None
    return path / "tokenizer.json" if stat.S_ISDIR(found.st_mode) else path


def get_tokenizer(spec: str) -> TiktokenTokenizer | HFTokenizer:
    """A tokenizer by name (o200k_base, o200k_harmony, cl100k_base, qwen3) or tokenizer.json path."""
    with _LOCK:
        return _cached_tokenizer(spec)


def all_special_tokens(tokenizer: Tokenizer) -> frozenset[str]:
    """Every special or added token string the tokenizer has: what fences must escape.

    A tokenizer without `all_specials` (the server's, a test double) gives its `specials()`.
    """
    full = getattr(tokenizer, "all_specials", None)
    if callable(full):
        found: frozenset[str] = full()
        return found
    return frozenset(tokenizer.specials())
