"""The rendered document with the origin of every character.

How: render once for the truth, and once more with every string that came from outside the
template (message fields, tool schemas, variables) marked with sentinels of a random key
(marking.py): no input can open or close a field, and a template that splits or slices a field
keeps each piece marked. The marked rendering is aligned to the true one in linear time
(alignment.py); a field the template changed at its ends (strip, trim) is marked `transformed`.
Text outside fields is the template's own (`marker`), split between messages at their turn
headers. When the marks made the template take another branch, or fail, the alignment is not
exact and divergence.py attributes instead, failing closed: every copy of an input that could
carry a header is claimed, and text that may hold one not found is `unattributed`, never `marker`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, TypeAlias

from tui.context.json_types import WireMessage
from tui.context.attribution.alignment import Segment, align, search_fields
from tui.context.attribution.divergence import attribute, leaves, note_marked_use
from tui.context.attribution.marking import (Field, Marked, SpanKind, input_strings, mark_inputs, new_key,
                                             read_marked)

ROLE_WORDS = re.compile(r"(user|assistant|system|developer|tool|model|ipython|human|bot|functions?)\b",
                        re.IGNORECASE)
ROLE_TOKENS = {"user", "assistant", "system", "developer", "inst", "system_prompt", "human", "bot", "tool"}
UNATTRIBUTED: SpanKind = "unattributed"  # text of no known field where the template's own text should be
# Marker text between two messages (or before the first, after the last): (start, end, owner) pieces of it.
OwnedPieces: TypeAlias = list[tuple[int, int, "int | None"]]


@dataclass
class Span:
    start: int
    end: int
    message: int | None  # index into the messages rendered, None for text of no message
    kind: SpanKind
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

    def tail_start(self) -> int:
        """Start of the trailing text that belongs to no message (the generation prompt)."""
        start = len(self.text)
        for span in reversed(self.spans):
            if span.message is not None:
                break
            start = span.start
        return start

    def check(self) -> None:
        """Spans must tile the text: contiguous, non-empty, covering every character once."""
        position = 0
        for span in self.spans:
            if span.start != position or span.end <= span.start:
                raise AssertionError(f"span {span} does not continue at {position}")
            position = span.end
        if position != len(self.text):
            raise AssertionError(f"spans end at {position}, text at {len(self.text)}")


def _opener_positions(text: str, specials: list[str]) -> list[int]:
    """Places in marker text where a turn header starts (a control token naming or followed by a role)."""
    positions: list[int] = []
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


def _marker_owner(gap: str, before: int | None, after: int | None, specials: list[str]) -> OwnedPieces:
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
    pieces: OwnedPieces = [(0, cuts[0], before)]
    for i, cut in enumerate(cuts):
        pieces.append((cut, cuts[i + 1] if i + 1 < len(cuts) else len(gap), owners[i]))
    return pieces


def _segments(truth: str, marked: Marked, render: Callable[..., str], key: str) -> list[Segment]:
    if not marked.fields:
        return []
    fields = marked.fields
    strings = leaves(fields)
    try:
        rendering = render(marked.messages, **marked.variables)
        plain, regions = read_marked(rendering, key, fields)
        segments, exact = align(plain, truth, regions, lambda number: fields[number].leaf)
    except Exception:  # noqa: BLE001 - the marks made the template fail (or it wrote marks of its own)
        hints = search_fields(truth, [(string.text, string.numbers[0]) for string in strings])
        return attribute(truth, fields, strings, hints)
    if exact:
        return segments
    note_marked_use(strings, fields, plain, regions)
    return attribute(truth, fields, strings, segments)


def _tile(truth: str, segments: list[Segment], fields: list[Field], specials: list[str]) -> list[Span]:
    """Spans over the whole text: fields and unattributed text as found, the template's text between."""
    runs: list[Span] = []  # adjacent chunks of one kind joined
    for start, end, number, transformed in sorted(segments, key=lambda segment: segment[:2]):
        if end <= start or (runs and start < runs[-1].end):
            continue
        message: int | None
        kind: SpanKind
        if number is None:
            message, kind = None, UNATTRIBUTED
        else:
            item = fields[number]
            message, kind = item.message, item.kind
            transformed = transformed or truth[start:end] != item.text
        last = runs[-1] if runs else None
        if last and last.end == start and last.message == message and last.kind == kind:
            last.end, last.transformed = end, last.transformed or transformed
        else:
            runs.append(Span(start, end, message, kind, transformed))
    return _merge(_with_markers(truth, runs, specials))


def _with_markers(truth: str, found: list[Span], specials: list[str]) -> list[Span]:
    """Fill the gaps between found spans with the template's text, each run owned by a message.

    Ownership runs from one message's text to the next: fields of no message (tools, variables)
    and unattributed text are blanked out of the run, so their text is never read as a header.
    """
    anchors = [i for i, span in enumerate(found) if span.message is not None and span.kind != UNATTRIBUTED]
    spans: list[Span] = []
    bounds = [-1, *anchors, len(found)]
    for left, right in zip(bounds, bounds[1:]):
        start = found[left].end if left >= 0 else 0
        end = found[right].start if right < len(found) else len(truth)
        before = found[left].message if left >= 0 else None
        after = found[right].message if right < len(found) else None
        if left >= 0:
            spans.append(found[left])
        inner = found[left + 1:right]
        spans.extend(_owned_run(truth, start, end, inner, before, after, specials))
    return spans


def _owned_run(truth: str, start: int, end: int, inner: list[Span], before: int | None, after: int | None,
               specials: list[str]) -> list[Span]:
    """truth[start:end] as marker spans owned by `before` or `after`, around the `inner` spans (kept)."""
    free: list[tuple[int, int]] = []
    blanked: list[str] = []
    position = start
    for span in inner:
        if span.kind == UNATTRIBUTED:
            span.message = before if before is not None else after
        if span.start > position:
            free.append((position, span.start))
        blanked += [truth[position:span.start], "\x00" * span.length]
        position = span.end
    if end > position:
        free.append((position, end))
    blanked.append(truth[position:end])
    cuts = [(start + a, start + b, owner) for a, b, owner in _marker_owner("".join(blanked), before, after, specials)]
    out, i, j = list(inner), 0, 0
    while i < len(free) and j < len(cuts):  # each free run, cut where the owner changes
        low, high = max(free[i][0], cuts[j][0]), min(free[i][1], cuts[j][1])
        if high > low:
            out.append(Span(low, high, cuts[j][2], "marker"))
        if free[i][1] <= cuts[j][1]:
            i += 1
        else:
            j += 1
    return sorted(out, key=lambda span: span.start)


def _merge(spans: list[Span]) -> list[Span]:
    """Adjacent spans of one message and kind become one (a field's chunks, a run of markers)."""
    merged: list[Span] = []
    for span in spans:
        last = merged[-1] if merged else None
        if last and last.kind == span.kind and last.message == span.message and last.end == span.start:
            last.end = span.end
            last.transformed = last.transformed or span.transformed
        else:
            merged.append(span)
    return merged


def build_document(render: Callable[..., str], messages: list[WireMessage], specials: list[str],
                   **variables: Any) -> Document:
    """Render `messages` and attribute every character of the result to a message and a kind.

    Raises only what the true render raises (TemplateRenderError): whatever the marked render
    does (fail, or write marks of its own) only changes how the text is attributed.
    """
    truth = render(messages, **variables)
    key = new_key()
    inputs = list(input_strings(messages, variables))
    while key in truth or any(key in text for text in inputs):  # never in practice; then draw again
        key = new_key()
    marked = mark_inputs(messages, variables, key)
    spans = _tile(truth, _segments(truth, marked, render, key), marked.fields, specials)
    return Document(truth, spans, [str(m.get("role", "")) for m in messages])



def claim_arguments(document: Document, messages: list[WireMessage]) -> Document:
    """The document with each tool call's arguments, handed to the template as an object (llama_wire.py) and
    written by its tojson, attributed to the call whole: marks reach only the object's strings, so its keys and
    punctuation would otherwise read as the template's own text. An arguments text the template wrote otherwise
    (indented, its own way) is not found and nothing changes. Only the spans of messages with such calls are
    looked at: a long conversation's other spans are kept as they are."""
    written = {index: texts for index, message in enumerate(messages) if (texts := _object_arguments(message))}
    if not written:
        return document
    spans, regions = list(document.spans), _regions(document.spans, written)
    # from the last region in the text to the first, so the places of those before stay valid; a template that
    # writes a message's text in pieces among others' (regions that interleave) is claimed one message at a time
    ordered = sorted(regions.items(), key=lambda item: item[1], reverse=True)
    if any(later[0] <= earlier[1] for (_i, later), (_j, earlier) in zip(ordered, ordered[1:])):
        for index, texts in written.items():
            spans = _claimed(spans, index, texts, document.text)
        return Document(document.text, spans, document.roles)
    for index, (first, last) in ordered:
        spans[first:last + 1] = _claimed(spans[first:last + 1], index, written[index], document.text)
    return Document(document.text, spans, document.roles)


def _claimed(spans: list[Span], index: int, texts: list[str], text: str) -> list[Span]:
    """`spans` with each of `texts` found within message `index`'s first and last span given to its tool call.
    The spans given are copied where changed (_merge changes spans in place)."""
    found = _regions(spans, [index]).get(index)
    if found is None:
        return spans
    first, last = found
    region = [replace(span) for span in spans[first:last + 1]]
    start, end = region[0].start, region[-1].end
    for arguments in texts:
        at = text.find(arguments, start, end)
        if at >= 0:
            region = _relabelled(region, at, at + len(arguments), index, "tool_call")
            start = at + len(arguments)
    return [*spans[:first], *_merge(region), *spans[last + 1:]]


def _object_arguments(message: WireMessage) -> list[str]:
    """Each call's arguments that are an object or a list, as HF's tojson writes them."""
    written: list[str] = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, dict) else None
        arguments = function.get("arguments") if isinstance(function, dict) else None
        if isinstance(arguments, (dict, list)):
            try:
                written.append(json.dumps(arguments, ensure_ascii=False))
            except (TypeError, ValueError, RecursionError):
                continue
    return written


def _regions(spans: list[Span], messages: Iterable[int]) -> dict[int, tuple[int, int]]:
    """For each of `messages` that has spans, the indexes of its first and its last span."""
    wanted, found = set(messages), dict[int, tuple[int, int]]()
    for position, span in enumerate(spans):
        if span.message is not None and span.message in wanted:
            first = found.get(span.message, (position, position))[0]
            found[span.message] = (first, position)
    return found


def _relabelled(spans: list[Span], start: int, end: int, message: int, kind: SpanKind) -> list[Span]:
    """`spans` with the template's text between `start` and `end` given to `message` as `kind` (a field's own
    text there stays as it was)."""
    out: list[Span] = []
    for span in spans:
        if span.end <= start or span.start >= end or span.kind not in ("marker", "unattributed"):
            out.append(span)
            continue
        if span.start < start:
            out.append(replace(span, end=start))
        out.append(Span(max(span.start, start), min(span.end, end), message, kind, span.transformed))
        if span.end > end:
            out.append(replace(span, start=end))
    return out


def first_difference(left: str, right: str, names: tuple[str, str] = ("left", "right"),
                     context: int = 40) -> dict[str, int | str] | None:
    """Where two texts first differ, with some text either side from each (None when equal)."""
    if left == right:
        return None
    index = next((i for i, (a, b) in enumerate(zip(left, right)) if a != b), min(len(left), len(right)))
    return {"index": index, "line": left.count("\n", 0, index) + 1,
            names[0]: left[max(0, index - context):index + context],
            names[1]: right[max(0, index - context):index + context]}
