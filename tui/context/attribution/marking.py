"""Mark every string that came from outside the template, render, and read the marks back.

Every string leaf of the messages, the tool schemas and the template variables is wrapped in
sentinels made of a random key (drawn afresh for each render, checked to occur nowhere in the
input or the true rendering), so no input can open or close a field. Two rules keep the marks
where they belong whatever the template does with the text:

- A string is cut into chunks at everything shaped like a marker (`<|im_start|>`, `</think>`,
  `[INST]`, `<<`, a fence's `<`), each chunk wrapped on its own. A template that splits a reply
  at `</think>` keeps every piece inside its own sentinels, and a turn header an input carries
  always sits in a marked chunk: a template can drop its marks only by cutting the header itself.
- A close mark whose open mark was cut away still owns the text before it that ends its chunk
  (the longest common suffix), and an open mark without its close the text after it that starts it.

Leaves that cannot carry structure stay unmarked so that templates can still test them: short
identifiers (`user`, `function`, `get_weather`, a 9-character tool-call id, `2025-01-01`) outside
free text (content, reasoning, tool-call arguments), and `role` and `type` values that are identifiers.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any, Callable, Iterator, Literal, TypeAlias

from tui.context.json_types import WireMessage

KEY_LENGTH = 6  # random private-use characters after U+E000: ~2**75 keys, and a key that occurs is redrawn
OPEN, CLOSE, END = "\ue001", "\ue002", "\ue003"
# Where a string is cut into chunks (bounded runs: linear on any input).
STRUCTURE = re.compile(r"</?[^<>\s]{1,40}>|\[/?[A-Za-z_@][\w@.-]{0,40}\]|<<|<(?=[\s/]{0,8}untrusted)", re.I)
# Every marker-shaped token, overlapping ones too: '<<|im_start|>' holds '<<' and '<|im_start|>'. A turn
# header, rule block or fence header always starts with one, so text without one cannot forge a block.
TOKENS = re.compile(f"(?=({STRUCTURE.pattern}))", re.I)
TOKEN_MAX = 48  # no token is longer (the bracket and tag shapes are bounded runs)
PIECE_SLACK = 64  # how much of its own text a template may write before each line of a field
IDENTIFIER = re.compile(r"[\w.:/@+-]{1,64}")  # no whitespace, brackets, bars or quotes: cannot form a header
STRUCTURAL_KEYS = frozenset({"role", "type"})
# What a stretch of the rendered document is: a message field's text (MESSAGE_KINDS), the tools' or a variable's,
# the template's own (`marker`), text no field explains (`unattributed`), or a fence's own text around a fenced
# message's content (request_fences.split_fence_spans).
SpanKind: TypeAlias = Literal["content", "reasoning", "tool_call", "name", "tool_schema", "variable", "marker",
                              "unattributed", "fence"]
MESSAGE_KINDS: dict[str, SpanKind] = {
    "content": "content", "reasoning_content": "reasoning", "thinking": "reasoning", "reasoning": "reasoning",
    "tool_calls": "tool_call", "tool_call_id": "tool_call", "name": "name"}
FREE_TEXT_KEYS = frozenset({"content", "reasoning_content", "thinking", "reasoning", "arguments"})
TOOLS_KIND: SpanKind = "tool_schema"
VARIABLE_KIND: SpanKind = "variable"
UNMARKED_VARIABLES = frozenset({"add_generation_prompt"})


@dataclass
class Field:
    message: int | None  # index of the message the text came from; None for tools and variables
    kind: SpanKind
    text: str  # the chunk's own text
    leaf: int  # which input string the chunk was cut from (its chunks are numbered in order)


@dataclass
class Marked:
    messages: list[WireMessage]
    variables: dict[str, Any]
    fields: list[Field] = field(default_factory=list)


def new_key() -> str:
    """A sentinel key: U+E000 then random private-use characters from U+E001..U+F8FF.

    U+E000 occurs once, at the start, so a key cannot overlap itself: input text ending in part
    of a key and followed by a real sentinel never forms a second key. Open, close and the field
    number's end are private-use characters too, and the number is digits: no case change, strip
    or JSON encoding (ensure_ascii off, as HF's tojson) alters a sentinel.
    """
    return "\ue000" + "".join(chr(0xE001 + secrets.randbelow(0x18FF)) for _ in range(KEY_LENGTH))


def input_strings(messages: list[WireMessage], variables: dict[str, Any]) -> Iterator[str]:
    """Every string in the inputs, keys included (a sentinel key must occur in none of them)."""
    stack: list[Any] = [messages, variables]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            yield value
        elif isinstance(value, dict):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, (list, tuple)):
            stack.extend(value)


class _Marker:
    def __init__(self, key: str):
        self.key = key
        self.fields: list[Field] = []
        self.leaves = 0

    def wrap(self, text: str, message: int | None, kind: SpanKind) -> str:
        self.leaves += 1
        out: list[str] = []
        position = 0
        for match in STRUCTURE.finditer(text):
            if match.start() > position:
                out.append(self._chunk(text[position:match.start()], message, kind))
            out.append(self._chunk(match.group(0), message, kind))
            position = match.end()
        if position < len(text):
            out.append(self._chunk(text[position:], message, kind))
        return "".join(out)

    def _chunk(self, text: str, message: int | None, kind: SpanKind) -> str:
        self.fields.append(Field(message, kind, text, self.leaves))
        number = len(self.fields) - 1
        return f"{self.key}{OPEN}{number}{END}{text}{self.key}{CLOSE}{number}{END}"

    def walk(self, value: Any, message: int | None, kind: SpanKind, free: bool) -> Any:
        if isinstance(value, str):
            if value and (free or not IDENTIFIER.fullmatch(value)):
                return self.wrap(value, message, kind)
            return value
        if isinstance(value, dict):
            out: dict[Any, Any] = {}
            for name, item in value.items():
                new_name = self.walk(name, message, kind, False) if isinstance(name, str) else name
                # `role` and `type` values are tested by templates; an odd one matches no test either way
                inner = False if name in STRUCTURAL_KEYS else free or name == "arguments"
                out[new_name] = self.walk(item, message, kind, inner)
            return out
        if isinstance(value, (list, tuple)):
            return [self.walk(item, message, kind, free) for item in value]
        return value


def mark_inputs(messages: list[WireMessage], variables: dict[str, Any], key: str) -> Marked:
    """Copies of the messages and variables with every string leaf that could carry text marked."""
    marker = _Marker(key)
    marked_messages: list[WireMessage] = []
    for index, message in enumerate(messages):
        marked: WireMessage = {}
        for name, value in message.items():
            kind = MESSAGE_KINDS.get(name, "name")
            marked[name] = marker.walk(value, index, kind, name in FREE_TEXT_KEYS)
        marked_messages.append(marked)
    marked_variables: dict[str, Any] = {}
    for name, value in variables.items():
        if name in UNMARKED_VARIABLES:
            marked_variables[name] = value
        else:
            marked_variables[name] = marker.walk(value, None, TOOLS_KIND if name == "tools" else VARIABLE_KIND, False)
    return Marked(marked_messages, marked_variables, marker.fields)


def read_marked(marked: str, key: str, fields: list[Field]) -> tuple[str, list[tuple[int, int, int]]]:
    """The plain text of a marked rendering and the (start, end, field) regions inside it."""
    # At most 9 digits (there are never that many fields): a template that rebuilds the key and writes a
    # longer number writes text, not a mark, and int() never sees a number it would refuse.
    parts = re.split(re.escape(key) + f"([{OPEN}{CLOSE}])([0-9]{{1,9}}){END}", marked)
    texts = parts[0::3]
    positions = accumulate(map(len, texts[:-1]))
    events = [(at, mark == OPEN, number) for at, mark, number
              in zip(positions, parts[1::3], map(int, parts[2::3])) if number < len(fields)]
    text = "".join(texts)
    return text, _outermost(_pair(text, events, fields))


def _pair(text: str, events: list[tuple[int, bool, int]], fields: list[Field]) -> list[tuple[int, int, int]]:
    """Regions from open/close pairs; a lone mark claims what its chunk's cut-off part left."""
    regions: list[tuple[int, int, int]] = []
    opened: dict[int, int] = {}  # field number -> index of its open mark in `events`
    for index, (at, is_open, number) in enumerate(events):
        if is_open:
            if number in opened:  # an earlier open whose close was cut away
                regions.append(_lone_open(text, events, opened.pop(number), fields))
            opened[number] = index
        elif number in opened:
            first = opened.pop(number)
            whole = (events[first][0], at, number)
            # No other mark between the pair: anything in it not the chunk's own is the template's
            regions.extend(_lines(text, whole, fields[number].text) if first == index - 1 else [whole])
        else:
            before = events[index - 1][0] if index else 0
            size = _whole_structure(fields[number].text, _common_suffix(text, before, at, fields[number].text))
            regions.append((at - size, at, number))
    regions.extend(_lone_open(text, events, index, fields) for index in opened.values())
    return [region for region in regions if region[1] > region[0]]


def holds_token(text: str, start: int, end: int) -> bool:
    """Whether a marker-shaped token starts in text[start:end] (it may run on past `end`)."""
    match = TOKENS.search(text, start, min(len(text), end + TOKEN_MAX))
    return match is not None and match.start() < end


def _lines(text: str, region: tuple[int, int, int], chunk: str) -> list[tuple[int, int, int]]:
    """A chunk the template split at newlines and wrote line by line with its own text before each line
    (GigaChat's `// ` before each line of a tool description): one region per line, the text between
    them the template's. The whole region stays the chunk's unless every line is found, in order, each
    at most PIECE_SLACK characters after the last, and the text between them holds no marker-shaped token
    (so no header can pass for the template's there, whoever wrote it)."""
    start, end, number = region
    if "\n" not in chunk or text[start:end] == chunk:
        return [region]
    lines, at = chunk.splitlines(keepends=True), start
    pieces: list[tuple[int, int, int]] = []
    for line in lines:
        found = text.find(line, at, min(end, at + PIECE_SLACK + len(line)))
        if found < 0 or holds_token(text, at, found) or (not pieces and found != start):
            return [region]
        pieces.append((found, found + len(line), number))
        at = found + len(line)
    return pieces if at == end else [region]


def _lone_open(text: str, events: list[tuple[int, bool, int]], index: int,
               fields: list[Field]) -> tuple[int, int, int]:
    at, _, number = events[index]
    after = events[index + 1][0] if index + 1 < len(events) else len(text)
    chunk = fields[number].text
    size = _common_length(lambda n: text[at:at + n] == chunk[:n], min(after - at, len(chunk)))
    return (at, at + _whole_structure(chunk, size), number)


def _whole_structure(chunk: str, size: int) -> int:
    """A marker-shaped chunk is claimed whole or not at all: where a template cut one (splitting a reply
    at `</think>`), the text beside the cut is the template's own (the `>` of `<｜Assistant｜>`)."""
    return size if size == len(chunk) or not STRUCTURE.fullmatch(chunk) else 0


def _common_suffix(text: str, start: int, end: int, chunk: str) -> int:
    return _common_length(lambda n: text[end - n:end] == chunk[len(chunk) - n:], min(end - start, len(chunk)))


def _common_length(equal: Callable[[int], bool], limit: int) -> int:
    """The largest n <= limit with equal(n), for a prefix-closed test: a binary search of slice compares."""
    low, high = 0, limit
    while low < high:
        middle = (low + high + 1) // 2
        if equal(middle):
            low = middle
        else:
            high = middle - 1
    return low


def _outermost(regions: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """A chunk copied twice or sliced can nest or overlap: keep the outermost, in order."""
    kept: list[tuple[int, int, int]] = []
    for region in sorted(regions, key=lambda r: (r[0], -r[1])):
        if not kept or region[0] >= kept[-1][1]:
            kept.append(region)
    return kept
