"""A request body as the exact text that was sent, cut into the parts that repeat from one request to the next.

A body is one JSON object. Its messages (an array under `messages`, `input` or `contents`: chat completions,
the Responses API, Gemini) are cut out item by item, and any other top-level value of BIG characters or more
(`tools`, a long `system` or `instructions`) as one part; what is left is the frame, a few hundred characters
(`{"model":"x","messages":[` … `],"stream":true}`). Each part is kept as its exact text, so joining the frame and
the parts gives the body back byte for byte, whatever the client's spacing, key order or escapes.

Nothing here assumes a request format beyond "a JSON object": a body that is not one (or an array whose items
are not separated alike) is one frame with no parts, kept whole.

Cutting the body of a conversation's next request reuses what the previous cut found: the items the two texts
share from their start are not parsed again (the common start is found by comparing the texts, at the speed of
a memory comparison), so the work grows with what is new, not with the conversation.
"""

from __future__ import annotations

import bisect
import json
from dataclasses import dataclass

LIST_KEYS = frozenset({"messages", "input", "contents"})
BIG = 1024  # characters: a top-level value this long is a part of its own
_WHITESPACE = " \t\n\r"
_DECODER = json.JSONDecoder()


@dataclass(frozen=True)
class Hole:
    """A part of the body: one value (`items` is None: its text is `text`), or the items of an array."""

    key: str
    text: str = ""
    items: tuple[str, ...] | None = None
    spans: tuple[tuple[int, int], ...] = ()  # where each item stands in the body (for the next cut)
    lead: str = ""  # the text between "[" and the first item
    sep: str = ","  # between two items (the same between every two, or the array is not cut)
    trail: str = ""  # between the last item and "]"
    start: int = 0  # where the hole starts in the body
    reused: int = 0  # its first items are the previous cut's (the same strings): what is known of them holds


@dataclass(frozen=True)
class Split:
    """`pieces[0] + hole 0 + pieces[1] + … + pieces[-1]` is the body; len(pieces) == len(holes) + 1."""

    text: str
    pieces: tuple[str, ...]
    holes: tuple[Hole, ...]


def hole_text(hole: Hole) -> str:
    if hole.items is None:
        return hole.text
    return hole.lead + hole.sep.join(hole.items) + hole.trail


def join(pieces: tuple[str, ...] | list[str], holes: list[str]) -> str:
    """The body from its frame and the text of each hole."""
    out = [pieces[0]]
    for text, piece in zip(holes, pieces[1:]):
        out.append(text)
        out.append(piece)
    return "".join(out)


def whole(text: str) -> Split:
    return Split(text, (text,), ())


def common_start(a: str, b: str) -> int:
    """How many characters `a` and `b` share from their start (slices compared in halves: memcmp speed)."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    low, high = 0, n  # a[:low] == b[:low], a[:high] != b[:high]
    while high - low > 1:
        middle = (low + high) // 2
        if a[low:middle] == b[low:middle]:
            low = middle
        else:
            high = middle
    return low


def _space(text: str, at: int) -> int:
    while at < len(text) and text[at] in _WHITESPACE:
        at += 1
    return at


class _NotCut(ValueError):
    pass


def split(text: str, previous: Split | None = None) -> Split:
    """The body cut into frame and parts; `previous` (the conversation's last body) spares parsing what it shares."""
    try:
        return _split(text, previous)
    except (_NotCut, ValueError, IndexError, RecursionError):
        return whole(text)


def _split(text: str, previous: Split | None) -> Split:
    shared = common_start(previous.text, text) if previous is not None else 0
    known = {hole.key: hole for hole in previous.holes if hole.items is not None} if previous is not None else {}
    at = _space(text, 0)
    if text[at:at + 1] != "{":
        raise _NotCut
    at = _space(text, at + 1)
    pieces: list[str] = []
    holes: list[Hole] = []
    mark = 0  # where the current piece of frame began
    if text[at:at + 1] == "}":
        return whole(text)
    while True:
        if text[at:at + 1] != '"':
            raise _NotCut
        key, at = _DECODER.raw_decode(text, at)
        at = _space(text, at)
        if text[at:at + 1] != ":":
            raise _NotCut
        at = _space(text, at + 1)
        if key in LIST_KEYS and text[at:at + 1] == "[":
            hole = _array(text, key, at + 1, known.get(key), shared)
            if hole is not None:
                pieces.append(text[mark:hole.start])
                holes.append(hole)
                mark = hole.start + len(hole_text(hole))
                at = mark + 1  # past "]"
            else:
                _value, at = _DECODER.raw_decode(text, at)
        else:
            _value, end = _DECODER.raw_decode(text, at)
            if end - at >= BIG:
                pieces.append(text[mark:at])
                holes.append(Hole(str(key), text=text[at:end], start=at))
                mark = end
            at = end
        at = _space(text, at)
        if text[at:at + 1] == ",":
            at = _space(text, at + 1)
            continue
        if text[at:at + 1] == "}":
            break
        raise _NotCut
    if text[_space(text, at + 1):]:
        raise _NotCut  # something after the object: not a body
    pieces.append(text[mark:])
    return Split(text, tuple(pieces), tuple(holes))


def _array(text: str, key: str, opened: int, before: Hole | None, shared: int) -> Hole | None:
    """The items of the array whose "[" ends at `opened`; None when they are not separated alike."""
    first = _space(text, opened)
    lead = text[opened:first]
    if text[first:first + 1] == "]":
        return None  # empty: nothing to cut
    spans: list[tuple[int, int]] = []
    items: list[str] = []
    seps: set[str] = set()
    at = first
    reused = 0
    if before is not None and before.start == opened and before.lead == lead and before.spans \
            and before.items is not None:
        # The items the previous body shared from its start are the same items: their spans carry over (the first
        # span ending at or past the shared start, found by bisection: no pass over the conversation).
        reused = bisect.bisect_left(before.spans, shared, key=lambda span: span[1])
        if reused:
            spans, items = list(before.spans[:reused]), list(before.items[:reused])
            if reused > 1:
                seps.add(before.sep)
            end = spans[-1][1]
            after = _space(text, end)
            if text[after:after + 1] == ",":
                at = _space(text, after + 1)
                seps.add(text[end:at])
            elif text[after:after + 1] == "]":
                return _hole(key, opened, lead, spans, items, seps, text[end:after], reused)
            else:
                raise _NotCut
            if len(seps) > 1:
                return None
    while True:
        _value, end = _DECODER.raw_decode(text, at)
        spans.append((at, end))
        items.append(text[at:end])
        after = _space(text, end)
        if text[after:after + 1] == ",":
            at = _space(text, after + 1)
            seps.add(text[end:at])
            if len(seps) > 1:
                return None
            continue
        if text[after:after + 1] == "]":
            return _hole(key, opened, lead, spans, items, seps, text[end:after], reused)
        raise _NotCut


def _hole(key: str, opened: int, lead: str, spans: list[tuple[int, int]], items: list[str], seps: set[str],
          trail: str, reused: int) -> Hole:
    return Hole(key, items=tuple(items), spans=tuple(spans), lead=lead, sep=next(iter(seps), ","), trail=trail,
                start=opened, reused=reused)
