"""The hidden tokens of a request, per turn: reasoning, tool schemas, tool calls, tool results, images.

Read from the rendered document's origins (document.py): every character belongs to a message and a
kind, and every span holds its tokens (tokens.py). A turn's tokens are split by what they are:

- text: the message's own content (fences included); tool results: the content of a `tool` message;
- reasoning: `reasoning_content` as the template writes it, and every `<think>` block of an assistant turn
  (its tags included);
- tool calls: an assistant's tool_calls, and the wrapping templates write around them (`<tool_call>` blocks
  and the like, TOOL_CALL);
- tool schemas: the tools list as the template writes it: its JSON found in the document (tool_regions), or
  the marked strings of the schema when the template writes it another way;
- images: the placeholder tokens the template writes for an image part (`<|vision_start|><|image_pad|>
  <|vision_end|>`), plus what the image costs beyond them (image_tokens.py: an estimate);
- template: the template's own text (turn headers and the like).

Reasoning the template drops: a message that carries reasoning of which nothing appears in the document
(Qwen3 writes `<think>` only for the turns after the last user message). When that turn was the latest, its
reasoning was in the prompt; now it is not, so the document changes at that turn between requests and the
cache prefix breaks there (cache_causes.REASONING).
"""

from __future__ import annotations

import json
import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Callable, Literal, Sequence, TypeAlias

from tui.context.cache.causes import CauseClass
from tui.context.document import Document
from tui.context.images.tokens import ANY_PLACEHOLDER, MEDIA_MARKER, ImageEstimate, part_estimate, part_format, part_size
from tui.context.json_types import JSONObject
from tui.context.messages import Message, image_parts
from tui.context.tokens.counting import SegmentCache, TokenIndex, Tokenizer
from tui.context.tokens.pieces import TokenStarts as Offsets

NO_MESSAGE = -1  # the turn of text no message wrote
Category: TypeAlias = Literal["text", "template", "reasoning", "tool_schema", "tool_calls", "tool_results", "images"]
CATEGORIES: tuple[Category, ...] = ("text", "template", "reasoning", "tool_schema", "tool_calls", "tool_results",
                                    "images")
THINK = re.compile(r"<think>(.*?)</think>", re.DOTALL)
# Tool calls as templates wrap them in an assistant turn (Qwen, Hermes; Kimi and DeepSeek's sections).
TOOL_CALL = re.compile(r"<tool_call>.*?</tool_call>|<\|tool_calls_section_begin\|>.*?<\|tool_calls_section_end\|>"
                       r"|<｜tool▁calls▁begin｜>.*?<｜tool▁calls▁end｜>", re.DOTALL)
STARTS = frozenset({"<|vision_start|>", "<start_of_image>", "<|image|>"})  # each begins one image's placeholder
_PLACEHOLDER = re.compile("|".join(map(re.escape, sorted(ANY_PLACEHOLDER, key=len, reverse=True))))


@dataclass
class ImageInfo:
    turn: int  # the message's place in the chat (#N)
    width: int | None
    height: int | None
    format: str
    estimate: ImageEstimate
    placeholder: str = ""  # the placeholder text the template wrote for it ("" when it wrote none)
    placeholder_tokens: int = 0

    @property
    def label(self) -> str:
        size = f"{self.width}×{self.height}" if self.width and self.height else "size unknown"
        return f"[image {size} {self.format or 'image'}, ~{self.estimate.tokens} tokens estimate]"  # = image_label

    def to_dict(self) -> JSONObject:
        return {"turn": self.turn, "width": self.width, "height": self.height, "format": self.format,
                "estimate": self.estimate.tokens, "family": self.estimate.family, "how": self.estimate.how,
                "placeholder": self.placeholder, "placeholder_tokens": self.placeholder_tokens,
                "label": self.label}


@dataclass
class TurnTokens:
    turn: int  # the message's place in the chat (#N); -1: text of no message (tool schemas, the generation
    # prompt) or the summary
    message_id: str
    role: str
    counts: dict[Category, int] = field(default_factory=lambda: dict.fromkeys(CATEGORIES, 0))
    reasoning_dropped: int = 0  # reasoning tokens the message carries that the template did not write

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def to_dict(self) -> JSONObject:
        record: JSONObject = {"turn": self.turn, "message_id": self.message_id, "role": self.role}
        for category, count in self.counts.items():
            record[category] = count
        return record | {"reasoning_dropped": self.reasoning_dropped, "total": self.total}


@dataclass
class HiddenTokens:
    turns: list[TurnTokens] = field(default_factory=list)
    images: list[ImageInfo] = field(default_factory=list)
    family: str = ""
    notes: list[str] = field(default_factory=list)  # reasoning dropped by the template, provider rules

    def total(self, category: Category) -> int:
        return sum(turn.counts[category] for turn in self.turns)

    @property
    def image_extra(self) -> int:
        """Image tokens beyond the placeholders the document already counts (an estimate)."""
        return sum(max(0, image.estimate.tokens - image.placeholder_tokens) for image in self.images)

    @property
    def reasoning_dropped(self) -> int:
        return sum(turn.reasoning_dropped for turn in self.turns)

    def to_dict(self) -> JSONObject:
        return {"image_family": self.family, "turns": [turn.to_dict() for turn in self.turns],
                "totals": {c: self.total(c) for c in CATEGORIES}, "reasoning_dropped": self.reasoning_dropped,
                "images": [image.to_dict() for image in self.images], "notes": list(self.notes),
                "images_label": "estimate"}


def reasoning_text(message: Message) -> str:
    """The reasoning a message carries: its reasoning_content, else the `<think>` block of its content."""
    if isinstance(message.reasoning_content, str) and message.reasoning_content.strip():
        return message.reasoning_content.strip("\n")
    found = THINK.search(message.text()) if message.role == "assistant" else None
    return found.group(1).strip("\n") if found and found.group(1).strip() else ""


def plain_count(tokenizer: Tokenizer, text: str, cache: SegmentCache | None = None) -> int:
    """Tokens of `text` as plain text (through the shared segment cache when given: recounts are free)."""
    if not text:
        return 0
    return len((cache.starts(tokenizer, text) if cache is not None else tokenizer.plain_starts(text))[0])


# How a template may write a tool as JSON: whole (or its `function`), ASCII-escaped, separators, keys sorted.
SchemaForm: TypeAlias = tuple[bool, bool, tuple[str, str], bool]
SCHEMA_FORMS: tuple[SchemaForm, ...] = tuple((whole, ascii_, seps, keys) for whole in (True, False) for ascii_ in (False, True)
                     for seps in ((", ", ": "), (",", ":")) for keys in (False, True))


def tool_regions(text: str, tools: Sequence[object] | None) -> list[tuple[int, int]]:
    """Where the template wrote each tool schema as JSON (the forms `tojson` and json.dumps give), if found.

    Short names in a schema are not marked (marking.py), so its text is mostly the template's own: found
    here by its serialisation instead. The form that finds the first tool is the template's: the others
    are looked for in it alone (and none, when no form finds the first)."""
    regions: list[tuple[int, int]] = []
    forms: tuple[SchemaForm, ...] = SCHEMA_FORMS
    for tool in tools or []:
        if not isinstance(tool, dict):
            continue
        for form in forms:
            whole, ascii_, seps, keys = form
            value = tool if whole else tool.get("function")
            if not isinstance(value, dict):
                continue
            written = json.dumps(value, ensure_ascii=ascii_, separators=seps, sort_keys=keys, default=str)
            at = text.find(written, regions[-1][1] if regions else 0)  # in order: a repeated tool once each
            if at >= 0:
                regions.append((at, at + len(written)))
                forms = (form,)
                break
        else:
            if forms is SCHEMA_FORMS:
                return _tools_block(text)  # the template writes its tools some other way
    return sorted(regions)


def _template_regions(document: Document, learned: tuple[tuple[str, ...], ...]) -> list[tuple[int, int]]:
    """Where the template wrote the text it adds for the tools (tool_text.py): the first set of pieces that all
    stand in the document, in order, as text of the template's own (marker spans), so a message quoting them is
    never taken for them."""
    for pieces in learned:
        regions: list[tuple[int, int]] = []
        at = 0
        for piece in pieces:
            found = _template_text(document, piece, at)
            if found is None:
                break
            regions.append(found)
            at = found[1]
        else:
            return regions
    return []


def _template_text(document: Document, piece: str, at: int) -> tuple[int, int] | None:
    start = document.text.find(piece, at)
    while start >= 0:
        end = start + len(piece)
        if all(span.kind in ("marker", "tool_schema") for span in document.spans
               if span.start < end and span.end > start):
            return start, end
        start = document.text.find(piece, start + 1)
    return None


TOOLS_BLOCK = ("<|tools_start|>", "<|tools_end|>")  # a template that writes its tools as its own block (openai)


def _tools_block(text: str) -> list[tuple[int, int]]:
    """The block from the template's tools marker to the last end marker before the first turn: the template
    writes it ahead of every message, so a message quoting the markers is never taken for it."""
    start = text.find(TOOLS_BLOCK[0])
    if start != 0:
        return []
    first_turn = text.find("<|im_start|>", start)
    end = text.rfind(TOOLS_BLOCK[1], start, first_turn if first_turn >= 0 else len(text))
    return [(start, end + len(TOOLS_BLOCK[1]))] if end > start else []


def hidden_tokens(document: Document, origin: list[int], messages: list[Message], tokenizer: Tokenizer,
                  family: str, tools: Sequence[object] | None = None, index: TokenIndex | None = None,
                  cache: SegmentCache | None = None, tool_text: tuple[tuple[str, ...], ...] = ()) -> HiddenTokens:
    """Per-turn counts of the document (its spans already counted), with images estimated for `family`.

    `index`: the document's tokens (tokens.token_index), to split a span that a region (a `<think>` block,
    a tool call, a tool schema) covers in part at the very tokens the document has; without it the part is
    counted on its own."""
    starts = TokenStarts(index) if index is not None else None
    result = HiddenTokens(family=family)
    rows: dict[int, TurnTokens] = {}
    rendered_reasoning: dict[int, int] = {}  # document message index -> reasoning characters written

    def row(doc_index: int | None) -> TurnTokens:
        key = -2 if doc_index is None else doc_index
        if key not in rows:
            session = origin[doc_index] if doc_index is not None and doc_index < len(origin) else None
            if session is None:
                rows[key] = TurnTokens(NO_MESSAGE, "", "none")
            elif session < 0:
                rows[key] = TurnTokens(NO_MESSAGE, "summary", "user")
            else:
                rows[key] = TurnTokens(session, messages[session].id, messages[session].role)
        return rows[key]

    text = document.text
    think_inner = Regions([(m.start(1), m.end(1)) for m in THINK.finditer(text)])
    claims: list[tuple[Regions, Category, bool]] = [(Regions(_template_regions(document, tool_text) or tool_regions(text, tools)), "tool_schema", False),
              # (regions, category, assistant only)
              (Regions([(m.start(), m.end()) for m in THINK.finditer(text)]), "reasoning", True),
              (Regions([(m.start(), m.end()) for m in TOOL_CALL.finditer(text)]), "tool_calls", True)]
    placeholders: dict[int, list[tuple[str, int]]] = {}
    with_images = {d for d, session in enumerate(origin) if session >= 0 and image_parts(messages[session].content)}
    for span in document.spans:
        turn = row(span.message)
        role, left = turn.role, span.tokens
        if span.kind in ("content", "reasoning") and role == "assistant" and span.message is not None:
            written = sum(b - a for a, b in think_inner.within(span.start, span.end))
            if span.kind == "reasoning" or written:
                rendered_reasoning[span.message] = rendered_reasoning.get(span.message, 0) + (
                    span.length if span.kind == "reasoning" else written)
        for regions, category, assistant_only in claims:
            if left and regions.spans and (role == "assistant" or not assistant_only) and span.kind != "tool_schema":
                taken = min(left, _overlap(regions, span.start, span.end, text, tokenizer, left, starts))
                turn.counts[category] += taken
                left -= taken
        if not left:
            continue
        if span.kind == "tool_schema":
            turn.counts["tool_schema"] += left
        elif span.kind == "reasoning":
            turn.counts["reasoning"] += left
        elif span.kind == "tool_call":
            turn.counts["tool_calls"] += left
        elif span.kind == "marker":
            runs = _placeholder_runs(text, span.start, span.end, tokenizer)
            used = min(left, sum(count for _text, count in runs))
            if runs and span.message is not None:
                placeholders.setdefault(span.message, []).extend(runs)
            turn.counts["images"] += used
            turn.counts["template"] += left - used
        else:
            markers = text.count(MEDIA_MARKER, span.start, span.end) if span.message in with_images else 0
            media = [(MEDIA_MARKER, plain_count(tokenizer, MEDIA_MARKER, cache))] * markers
            used = min(left, sum(count for _text, count in media))
            if media and span.message is not None:  # (media only in a message with images)
                placeholders.setdefault(span.message, []).extend(media)
            turn.counts["images"] += used
            turn.counts["tool_results" if role == "tool" else "text"] += left - used
    _images(result, origin, messages, placeholders, family, row)
    _dropped(result, origin, messages, rendered_reasoning, tokenizer, row, cache)
    result.turns = sorted(rows.values(), key=lambda t: (t.turn == NO_MESSAGE and t.role == "none", t.turn))
    return result


def _placeholder_runs(text: str, start: int, end: int, tokenizer: Tokenizer) -> list[tuple[str, int]]:
    """Runs of adjacent image placeholders in template text, with their tokens (one per control token)."""
    runs: list[tuple[str, int, int]] = []  # text, tokens, end
    for match in _PLACEHOLDER.finditer(text, start, end):
        found: str = match.group(0)
        count = tokenizer.special_count(found) if hasattr(tokenizer, "special_count") else 1
        if runs and runs[-1][2] == match.start() and found not in STARTS:
            joined, tokens, _end = runs[-1]
            runs[-1] = (joined + found, tokens + count, match.end())
        else:
            runs.append((found, count, match.end()))
    return [(text_, count) for text_, count, _end in runs]


class Regions:
    """Sorted, non-overlapping character ranges of the document, found by where they intersect a span."""

    def __init__(self, spans: list[tuple[int, int]]) -> None:
        self.spans = sorted(spans)
        self.highs = [high for _low, high in self.spans]

    def within(self, start: int, end: int) -> list[tuple[int, int]]:
        """The parts of text[start:end] inside a region."""
        found: list[tuple[int, int]] = []
        number = bisect_right(self.highs, start)
        while number < len(self.spans) and self.spans[number][0] < end:
            low, high = self.spans[number]
            found.append((max(start, low), min(end, high)))
            number += 1
        return found


def _overlap(regions: Regions, start: int, end: int, text: str, tokenizer: Tokenizer, tokens: int,
             starts: "TokenStarts | None") -> int:
    """Tokens of a span lying inside `regions`: all of them when the span is inside one, else the tokens that
    start in the overlap (read from the document's tokens when known, else the overlap counted alone)."""
    found = 0
    for a, b in regions.within(start, end):
        if a == start and b == end:
            return tokens
        found += starts.between(a, b) if starts is not None else plain_count(tokenizer, text[a:b])
    return min(tokens, found)


class TokenStarts:
    """Where the document's tokens start, read from its TokenIndex piece by piece (only pieces asked for)."""

    def __init__(self, index: TokenIndex) -> None:
        self.index = index
        self.ends = [piece[1] for piece in index.pieces]
        self.chars: dict[int, list[int]] = {}  # piece number -> token start characters

    def between(self, a: int, b: int) -> int:
        """Tokens that start in text[a:b]."""
        count, number = 0, bisect_right(self.ends, a)
        while number < len(self.index.pieces) and self.index.pieces[number][0] < b:
            start, _end, offsets, _in_bytes, tokens = self.index.pieces[number]
            if offsets is None:
                count += tokens if a <= start < b else 0
            else:
                positions = self._positions(number, offsets)
                count += bisect_left(positions, b) - bisect_left(positions, a)
            number += 1
        return count

    def _positions(self, number: int, offsets: Offsets) -> list[int]:
        """The start characters of piece `number`'s tokens, whose `offsets` the piece holds."""
        if number not in self.chars:
            start, end, _offsets, in_bytes, _tokens = self.index.pieces[number]
            if in_bytes:
                byte_at = list(accumulate((len(c.encode("utf-8")) for c in self.index.text[start:end]), initial=0))
                self.chars[number] = [start + bisect_left(byte_at, offset) for offset in offsets]
            else:
                self.chars[number] = [start + offset for offset in offsets]
        return self.chars[number]


def _images(result: HiddenTokens, origin: list[int], messages: list[Message],
            placeholders: dict[int, list[tuple[str, int]]], family: str,
            row: Callable[[int | None], TurnTokens]) -> None:
    for doc_index, session in enumerate(origin):
        if session < 0:
            continue
        parts = image_parts(messages[session].content)
        written = list(placeholders.get(doc_index, []))
        for part in parts:
            size = part_size(part)
            placeholder, count = written.pop(0) if written else ("", 0)
            info = ImageInfo(session, size[0] if size else None, size[1] if size else None,
                             part_format(part), part_estimate(part, family),
                             placeholder, count)
            result.images.append(info)
            row(doc_index).counts["images"] += max(0, info.estimate.tokens - count)
            if not placeholder:
                result.notes.append(f"the template wrote no placeholder for the image of turn #{session}: its "
                                    f"~{info.estimate.tokens} tokens (estimate) are added beyond the document")


def _dropped(result: HiddenTokens, origin: list[int], messages: list[Message], rendered: dict[int, int],
             tokenizer: Tokenizer, row: Callable[[int | None], TurnTokens], cache: SegmentCache | None) -> None:
    for doc_index, session in enumerate(origin):
        if session < 0 or messages[session].role != "assistant":
            continue
        reasoning = reasoning_text(messages[session])
        if not reasoning or rendered.get(doc_index, 0):
            continue
        turn = row(doc_index)
        turn.reasoning_dropped = plain_count(tokenizer, reasoning, cache)
        result.notes.append(
            f"the template dropped {turn.reasoning_dropped} reasoning tokens of turn #{turn.turn}: the document "
            "changes at that turn between requests, so the cache prefix "
            f"breaks there (cache cause: {CauseClass.REASONING})")

