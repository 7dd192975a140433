"""The cache-stable prefix: what a request shares with the previous one, and why it stops there.

Provider rules for what is actually reused:
- OpenAI: nothing below 1,024 prefix tokens; above, the prefix rounded down to a 128-token step.
- llama.cpp: the longest common prefix with the slot's last prompt, minus one (the last prompt
  token is always evaluated again).
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field

from .document import Document
from .tokens import TokenIndex

RULES = ("llama.cpp", "openai", "none")


@dataclass
class RequestShape:
    """What the cache comparison needs to remember of a request."""

    text: str
    tokens: TokenIndex  # where each token lies, by segment
    message_ids: list[str]
    message_texts: list[str]
    message_roles: list[str]
    tools: list | None = None
    variables: dict = field(default_factory=dict)
    dropped: frozenset = frozenset()  # ids of messages the policy left out
    tail_start: int | None = None  # where the trailing generation prompt begins (text of no message)
    spans: list[tuple[str, str, int, int, int]] = field(default_factory=list)  # message id, kind, start, end, tokens


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


def predict_cached(rule: str, prefix_tokens: int, total_tokens: int) -> int:
    if rule == "llama.cpp":
        return max(0, min(prefix_tokens, total_tokens - 1))
    if rule == "openai":
        return 0 if prefix_tokens < 1024 else 1024 + (prefix_tokens - 1024) // 128 * 128
    return 0


def _cause(previous: RequestShape, current: RequestShape, document: Document, boundary: int) -> tuple:
    tail = len(previous.text) if previous.tail_start is None else previous.tail_start
    if boundary >= tail:
        return None, None, "none: the whole previous request is reused (new turns follow)"
    starts = [s.start for s in document.spans]
    span = document.spans[bisect_right(starts, boundary) - 1] if document.spans and boundary < len(document.text) \
        else None
    message = span.message if span else None
    kind = span.kind if span else None
    newly_dropped = sorted(current.dropped - previous.dropped)
    if newly_dropped:
        return message, kind, f"truncation shift: {', '.join(newly_dropped)} dropped since the previous request"
    if (previous.tools or None) != (current.tools or None) and (message is None or kind == "marker"):
        return message, kind, "changed tool list"
    changed_vars = sorted(k for k in set(previous.variables) | set(current.variables)
                          if previous.variables.get(k) != current.variables.get(k))
    if message is not None and message < len(current.message_ids):
        message_id = current.message_ids[message]
        old = dict(zip(previous.message_ids, previous.message_texts))
        if message_id in old and old[message_id] != current.message_texts[message]:
            role = current.message_roles[message]
            what = "changed system prompt" if role in ("system", "developer") else f"edited {role} message"
            return message, kind, f"{what} ({message_id})"
        if message_id not in old and current.message_roles[message] in ("system", "developer"):
            return message, kind, f"system prompt added ({message_id})"  # its header differs first: not the template
        if message_id not in old and kind != "marker":
            return message, kind, f"new message {message_id} where the previous request had other text"
    if changed_vars:
        return message, kind, f"template variable changed: {', '.join(changed_vars)}"
    if kind == "marker":
        return message, kind, "template text changed (a date or other value the template writes)"
    return message, kind, f"changed text in {kind or 'the document'}"


def cache_prefix(previous: RequestShape | None, current: RequestShape, document: Document,
                 rule: str = "llama.cpp") -> CachePrefix:
    total = current.tokens.total
    if previous is None:
        return CachePrefix(0, 0, total, None, None, "first request: nothing cached yet", 0, rule)
    boundary = common_prefix_length(previous.text, current.text)
    shared = min(current.tokens.tokens_before(boundary), previous.tokens.total)
    message, kind, cause = _cause(previous, current, document, boundary)
    return CachePrefix(boundary, shared, total, message, kind, cause, predict_cached(rule, shared, total), rule)


def span_diff(previous: RequestShape | None, current: RequestShape) -> list[dict]:
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
    rows = []
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
