"""The rendered document with the origin of every character.

How: render once for the truth, and once more with each message field wrapped in sentinels made
of a random key drawn afresh for each render and checked to occur in no input and nowhere in the
true rendering, so no message text can open or close a field. Where the template copies a field
verbatim, the sentinels give its exact place. Where
the template transforms it (strip, tojson, slicing), the sentinel rendering is aligned to the true
one and the span is marked `transformed`. Text outside fields is the template's own (`marker`),
split between messages at their turn headers.
"""

from __future__ import annotations

import copy
import difflib
import json
import re
import secrets
from dataclasses import dataclass, field
from typing import Any, Callable

KEY_LENGTH = 6  # random private-use characters after U+E000: ~2**75 keys, and a key that occurs is redrawn
ROLE_WORDS = re.compile(r"(user|assistant|system|developer|tool|model|ipython|human|bot|functions?)\b",
                        re.IGNORECASE)
ROLE_TOKENS = {"user", "assistant", "system", "developer", "inst", "system_prompt", "human", "bot", "tool"}
ALIGN_LIMIT = 400_000  # characters; past this a failed fast alignment falls back to text search


@dataclass
class Span:
    start: int
    end: int
    message: int | None  # index into the messages rendered, None for text of no message
    kind: str
    transformed: bool = False
    tokens: int = 0

    @property
    def length(self) -> int:
        return self.end - self.start


@dataclass
class Document:
    text: str
    spans: list[Span]
    roles: list[str] = field(default_factory=list)  # role of each message index

    def span_text(self, span: Span) -> str:
        return self.text[span.start:span.end]

    def role_of(self, span: Span) -> str:
        return "none" if span.message is None else self.roles[span.message]

    def check(self) -> None:
        """Spans must tile the text: contiguous, non-empty, covering every character once."""
        position = 0
        for span in self.spans:
            if span.start != position or span.end <= span.start:
                raise AssertionError(f"span {span} does not continue at {position}")
            position = span.end
        if position != len(self.text):
            raise AssertionError(f"spans end at {position}, text at {len(self.text)}")


@dataclass
class _Field:
    message: int
    kind: str
    text: str


def new_key() -> str:
    """A sentinel key: U+E000 then random private-use characters from U+E001..U+F8FF.

    U+E000 occurs once, at the start, so a key cannot overlap itself: input text ending in part
    of a key and followed by a real sentinel never forms a second key. The characters stay in the
    Basic Multilingual Plane, so the marked rendering costs no more than the true one.
    """
    return "\ue000" + "".join(chr(0xE001 + secrets.randbelow(0x18FF)) for _ in range(KEY_LENGTH))


def _mark(value: str, fid: int, key: str) -> str:
    return f"{key}o{fid}\ue002{value}{key}c{fid}\ue002"


def wrap_fields(messages: list[dict], key: str) -> tuple[list[dict], list[_Field]]:
    """Copies of the messages with every non-empty text field wrapped in numbered sentinels."""
    fields: list[_Field] = []
    wrapped = copy.deepcopy(messages)

    def mark(value: Any, index: int, kind: str) -> Any:
        if not isinstance(value, str) or not value:
            return value
        fields.append(_Field(index, kind, value))
        return _mark(value, len(fields) - 1, key)

    for index, message in enumerate(wrapped):
        content = message.get("content")
        if isinstance(content, list):
            for part in content:
                if isinstance(part, dict) and "text" in part:
                    part["text"] = mark(part["text"], index, "content")
        else:
            message["content"] = mark(content, index, "content")
        for name in ("reasoning_content", "thinking", "reasoning"):
            if name in message:
                message[name] = mark(message[name], index, "reasoning")
        for call in message.get("tool_calls") or []:
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict):
                args = function.get("arguments")
                if isinstance(args, dict):
                    function["arguments"] = {k: mark(v, index, "tool_call") for k, v in args.items()}
                else:
                    function["arguments"] = mark(args, index, "tool_call")
    return wrapped, fields


def _pieces(marked: str, key: str) -> list[tuple[str, Any]]:
    """Split a sentinel rendering into ("text", str), ("open", id), ("close", id) pieces."""
    pieces: list[tuple[str, Any]] = []
    position = 0
    for match in re.finditer(re.escape(key) + "([oc])(\\d+)\ue002", marked):
        if match.start() > position:
            pieces.append(("text", marked[position:match.start()]))
        pieces.append(("open" if match.group(1) == "o" else "close", int(match.group(2))))
        position = match.end()
    if position < len(marked):
        pieces.append(("text", marked[position:]))
    return pieces


def _regions(pieces: list[tuple[str, Any]]) -> tuple[str, list[tuple[int, int, int]]]:
    """The plain text of a sentinel rendering and the (start, end, field) regions inside it."""
    plain: list[str] = []
    length = 0
    opened: dict[int, int] = {}
    regions = []
    for kind, value in pieces:
        if kind == "text":
            plain.append(value)
            length += len(value)
        elif kind == "open":
            opened[value] = length
        elif value in opened:
            regions.append((opened.pop(value), length, value))
    regions.sort()
    # A field copied twice or sliced can nest or overlap: keep the outermost, in order.
    kept: list[tuple[int, int, int]] = []
    for region in regions:
        if region[1] > region[0] and (not kept or region[0] >= kept[-1][1]):
            kept.append(region)
    return "".join(plain), kept


def _map_regions(plain: str, truth: str, regions: list) -> list[tuple[int, int, int, bool]] | None:
    """Carry regions of `plain` over to `truth`, which differs where the template transformed fields."""
    if plain == truth:
        return [(a, b, f, False) for a, b, f in regions]
    if len(plain) + len(truth) > ALIGN_LIMIT:
        return None
    matcher = difflib.SequenceMatcher(None, plain, truth, autojunk=False)
    blocks = matcher.get_matching_blocks()

    def carry(position: int) -> int:
        for a, b, size in blocks:
            if a <= position <= a + size:
                return b + (position - a)
            if a > position:
                return b
        return len(truth)

    mapped = []
    for a, b, fid in regions:
        start, end = carry(a), carry(b)
        if end > start:
            mapped.append((start, end, fid, truth[start:end] != plain[a:b]))
    return mapped


def _search_regions(truth: str, fields: list[_Field]) -> list[tuple[int, int, int, bool]]:
    """Last resort: find each field's text, in order, in the true rendering."""
    found, cursor = [], 0
    for fid, item in enumerate(fields):
        for candidate in (item.text, item.text.strip(), json.dumps(item.text, ensure_ascii=False)[1:-1]):
            at = truth.find(candidate, cursor) if candidate else -1
            if at >= 0:
                found.append((at, at + len(candidate), fid, candidate != item.text))
                cursor = at + len(candidate)
                break
    return found


def _opener_positions(text: str, specials: list[str]) -> list[int]:
    """Places in marker text where a turn header starts (a control token naming or followed by a role)."""
    positions = []
    for token in specials:
        start = 0
        while (at := text.find(token, start)) >= 0:
            start = at + len(token)
            inner = token.strip("<>|[]｜/ ").lower()
            if token.startswith(("</", "[/")) or inner.startswith("end") or inner.endswith("end"):
                continue
            if inner in ROLE_TOKENS or ROLE_WORDS.match(text[start:start + 16].lstrip()):
                positions.append(at)
    return sorted(set(positions))


def _marker_owner(gap: str, before: int | None, after: int | None, specials: list[str]):
    """Split a run of marker text between the message before it and the one after it."""
    if before is None and after is None:
        return [(0, len(gap), None)]
    openers = _opener_positions(gap, specials)
    if after is None:  # trailing text: the end of the last turn, then the generation prompt
        cut = openers[-1] if openers else len(gap)
        return [(0, cut, before), (cut, len(gap), None)]
    if before is None:  # leading text: BOS and the like, then the first header
        cut = openers[-1] if openers else 0
        return [(0, cut, None), (cut, len(gap), after)]
    if before == after or not openers:
        return [(0, len(gap), before)]
    # One header per message from `after` back towards `before`: skipped (empty) messages get theirs.
    cuts = openers[-(after - before):] if after > before else openers[:1]
    owners = list(range(after - len(cuts) + 1, after + 1)) if after > before else [after]
    pieces = [(0, cuts[0], before)]
    for i, cut in enumerate(cuts):
        pieces.append((cut, cuts[i + 1] if i + 1 < len(cuts) else len(gap), owners[i]))
    return pieces


def _tile(truth: str, regions: list, fields: list[_Field], specials: list[str]) -> list[Span]:
    spans: list[Span] = []
    cursor, previous = 0, None

    def add_markers(upto: int, following: int | None) -> None:
        if upto <= cursor:
            return
        gap = truth[cursor:upto]
        for start, end, owner in _marker_owner(gap, previous, following, specials):
            if end > start:
                spans.append(Span(cursor + start, cursor + end, owner, "marker"))

    for start, end, fid, transformed in regions:
        if start < cursor:
            continue
        item = fields[fid]
        add_markers(start, item.message)
        spans.append(Span(start, end, item.message, item.kind, transformed or truth[start:end] != item.text))
        cursor, previous = end, item.message
    add_markers(len(truth), None)
    return _merge(spans)


def _merge(spans: list[Span]) -> list[Span]:
    merged: list[Span] = []
    for span in spans:
        last = merged[-1] if merged else None
        if last and last.kind == span.kind == "marker" and last.message == span.message and last.end == span.start:
            last.end = span.end
        else:
            merged.append(span)
    return merged


def build_document(render: Callable[..., str], messages: list[dict], specials: list[str],
                   **variables: Any) -> Document:
    """Render `messages` and attribute every character of the result to a message and a kind."""
    truth = render(messages, **variables)
    key = new_key()
    wrapped, fields = wrap_fields(messages, key)
    while key in truth or any(key in item.text for item in fields):  # never in practice; then draw again
        key = new_key()
        wrapped, fields = wrap_fields(messages, key)
    regions = None
    if fields:
        try:
            plain, plain_regions = _regions(_pieces(render(wrapped, **variables), key))
            regions = _map_regions(plain, truth, plain_regions)
        except Exception:  # the sentinels changed the template's branches; search instead
            regions = None
        if regions is None:
            regions = _search_regions(truth, fields)
    document = Document(truth, _tile(truth, regions or [], fields, specials),
                        [str(m.get("role", "")) for m in messages])
    return document


def first_difference(left: str, right: str, names: tuple[str, str] = ("left", "right"),
                     context: int = 40) -> dict | None:
    """Where two texts first differ, with some text either side from each (None when equal)."""
    if left == right:
        return None
    index = next((i for i, (a, b) in enumerate(zip(left, right)) if a != b), min(len(left), len(right)))
    return {"index": index, "line": left.count("\n", 0, index) + 1,
            names[0]: left[max(0, index - context):index + context],
            names[1]: right[max(0, index - context):index + context]}
