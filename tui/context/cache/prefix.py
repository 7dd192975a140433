"""What the cache comparison starts from: a request's shape, and where two requests' texts part.

Provider rules for what is actually reused live in cache_rules.py (one table); this module keeps what
every rule starts from: the request's shape, the common prefix of two texts, the token at an offset and
the span-by-span difference. The prediction (against the previous request, or every prompt a server may
still hold) is in cache_predict.py, above the server models built on these shapes; the causes of a break
are classed in cache_causes.py.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict

from tui.context.cache.rules import RULES as TABLE, SERVER, prefix_cached, rule_for
from tui.context.json_types import JSONObject
from tui.context.tokens.counting import TokenIndex

RULES = ("llama.cpp", "openai", "openai-5.6", "anthropic", "gemini", "deepseek", "none")


@dataclass
class RequestShape:
    """What the cache comparison needs to remember of a request."""

    text: str
    tokens: TokenIndex  # where each token lies, by segment
    message_ids: list[str]
    message_texts: list[str]
    message_roles: list[str]
    tools: list[JSONObject] | None = None
    variables: dict[str, Any] = field(default_factory=dict)
    dropped: frozenset[str] = frozenset()  # ids of messages the policy left out
    tail_start: int | None = None  # where the trailing generation prompt begins (text of no message)
    spans: list[tuple[str, str, int, int, int]] = field(default_factory=list)  # message id, kind, start, end, tokens
    # each message's tool calls as sent (None: it has none)
    calls: list[list[JSONObject] | None] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)  # each message's reasoning as sent
    blocks: list[tuple[int, str]] = field(default_factory=list)  # where each message's content ends, and its
    # cache_control lifetime ("5m", "1h"; "" when unmarked): Anthropic's breakpoints
    places: list[int] = field(default_factory=list)  # each message's place in the chat (#N); -1: the summary
    template: str = ""  # the template's name and text digest, and whether untrusted text was fenced (ids of the
    template_digest: str = ""  # messages sent fenced): a switch is its own cause
    fenced: bool | None = None
    fenced_ids: frozenset[str] = frozenset()
    block_roles: list[str] = field(default_factory=list)  # the role of each entry of `blocks`


@dataclass
class CachePrefix:
    chars: int
    tokens: int  # tokens of this request lying wholly inside the shared prefix
    total_tokens: int
    message: int | None  # document message index where the prefix ends
    span_kind: str | None
    cause: str
    predicted_cached: int
    rule: str
    cause_class: str = ""  # a CauseClass (tui/context/cache/causes.py); "" when there is no cause
    source: int | None = None  # the earlier request the reuse comes from
    place: str = "previous request"  # where the server holds it ("slot 0", "prompt cache -> slot 0", ...)
    in_reply: int = 0  # shared tokens that continue into the source's reply
    diverges: str = ""  # the new prompt's text at the first divergent token
    diverged: str = ""  # the source's text there
    write: int = 0  # tokens a breakpoint rule writes to the cache (Anthropic)
    write_lifetime: str = ""  # the lifetime it writes them for ("5m", "1h"): a 1-hour write costs more
    best_effort: bool = False  # the provider may reuse less: the prediction is an upper bound
    # every prompt held: (request, place, shared tokens)
    candidates: list[tuple[int, str, int]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def divergent_token(self) -> int:
        """Index of the first token of this request that differs from the source (the rule may reuse less:
        OpenAI's 128-token steps, llama.cpp's last token, a provider's minimum)."""
        return self.tokens


def common_prefix_length(a: str, b: str, step: int = 4096) -> int:
    """Length of the common prefix: equal chunks are skipped at C speed, then the last one is halved."""
    limit = min(len(a), len(b))
    low = 0
    while low < limit and a[low:low + step] == b[low:low + step]:
        low += step
    if low >= limit:
        return limit
    high = min(low + step, limit)
    while low < high:
        mid = (low + high + 1) // 2
        if a[low:mid] == b[low:mid]:
            low = mid
        else:
            high = mid - 1
    return low


def predict_cached(rule: str, prefix_tokens: int, total_tokens: int, model: object = None) -> int:
    """Tokens a prefix rule reuses of `total_tokens` when `prefix_tokens` are shared (cache_rules.py)."""
    found = rule_for(rule)
    if found.kind == SERVER:  # against one earlier prompt a server model is its bare rule
        return max(0, min(prefix_tokens, total_tokens - 1))
    return prefix_cached(found, prefix_tokens, total_tokens, model) if found is not TABLE["none"] else 0


def token_start(index: TokenIndex, token: int) -> int:
    """Character offset where token number `token` starts."""
    piece_number = max(0, bisect_right(index.before, token) - 1)
    while 0 < piece_number < len(index.pieces) and index.pieces[piece_number][4] == 0:
        piece_number -= 1  # an empty piece holds no token
    if piece_number >= len(index.pieces):
        return len(index.text)
    start, end, starts, in_bytes, _count = index.pieces[piece_number]
    if starts is None:
        return start
    offset = starts[token - index.before[piece_number]]
    if not in_bytes:
        return start + offset
    return start + len(index.text[start:end].encode("utf-8")[:offset].decode("utf-8", "ignore"))


class SpanDiffRow(TypedDict):
    """One row of span_diff: a span new, gone or changed since the previous request, or a run of unchanged ones."""

    status: Literal["new", "same", "gone", "changed"]
    message: str  # the span's message id ("" for text of no message, and for a run)
    kind: str  # the span's kind, or "N spans" for a run
    chars: int
    tokens: int
    text: str  # the span's text ("" for a run)


def span_diff(previous: RequestShape | None, current: RequestShape) -> list[SpanDiffRow]:
    """This request against the previous one, span by span: what stayed, what changed, what is new or gone.

    Runs of unchanged spans are folded into one row; changed rows carry both texts' lengths and tokens.
    """
    from difflib import SequenceMatcher

    def keyed(shape: RequestShape) -> list[tuple[str, str, str]]:
        return [(mid, kind, shape.text[start:end]) for mid, kind, start, end, _ in shape.spans]

    if previous is None:
        return [{"status": "new", "message": mid, "kind": kind, "chars": end - start, "tokens": tokens,
                 "text": current.text[start:end]} for mid, kind, start, end, tokens in current.spans]
    old, new = keyed(previous), keyed(current)
    rows: list[SpanDiffRow] = []
    for op, a1, a2, b1, b2 in SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if op == "equal":
            rows.append({"status": "same", "message": "", "kind": f"{b2 - b1} spans", "chars":
                         sum(len(t) for _, _, t in new[b1:b2]), "tokens": sum(s[4] for s in current.spans[b1:b2]),
                         "text": ""})
            continue
        for index in range(a1, a2):
            mid, kind, text = old[index]
            rows.append({"status": "gone", "message": mid, "kind": kind, "chars": len(text),
                         "tokens": previous.spans[index][4], "text": text})
        for index in range(b1, b2):
            mid, kind, text = new[index]
            rows.append({"status": "changed" if op == "replace" else "new", "message": mid, "kind": kind,
                         "chars": len(text), "tokens": current.spans[index][4], "text": text})
    return rows
