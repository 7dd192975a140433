"""Carry the marked regions over to the true rendering, in linear time.

The marked rendering (sentinels removed) differs from the true one only where the template did
something to a field's ends that the sentinels shielded (strip, trim, lstrip('\\n')), or took
another branch because a field was marked. Alignment walks both texts from the front and from
the back: the template's own text between regions must match exactly, and each region matches
as it is or with its ends stripped (the next template text must follow it). When the two walks
meet, the marked rendering explains the whole true text and the alignment is exact. When they do
not, the renders diverged: what is left in the middle is searched for field by field, but only to
show where fields are; divergence.py decides what may be the template's own (alignment alone
would take a copy of the template's text inside a field for the template's).

A segment is (start, end, field, transformed) in the true text; field None marks unattributed text.
"""

from __future__ import annotations

from typing import Callable

from tui.context.attribution.marking import TOKEN_MAX, TOKENS

Segment = tuple[int, int, "int | None", bool]
Item = tuple[str, "int | None"]  # a stretch of the marked text: the template's own (None) or a field's (its number)
SEARCH_SLACK = 4_096  # how far past the expected place the search looks for a field
WORK_PER_CHAR = 8  # the search gives up after comparing this many characters per character of text

_TRIMS: tuple[Callable[[str], str], ...] = (
    str.strip, str.lstrip, str.rstrip, lambda s: s.strip("\n"), lambda s: s.lstrip("\n"), lambda s: s.rstrip("\n"))


def candidates(text: str) -> list[str]:
    """What a template may have made of a field: as it is, or with its ends stripped."""
    found = [text]
    for trim in _TRIMS:
        variant = trim(text)
        if variant not in found:
            found.append(variant)
    return found


def _items(plain: str, regions: list[tuple[int, int, int]]) -> list[Item]:
    """The marked text as template text and fields in turn: gap, field, gap, ..., gap."""
    items: list[Item] = []
    position = 0
    for start, end, number in regions:
        items.append((plain[position:start], None))
        items.append((plain[start:end], number))
        position = end
    items.append((plain[position:], None))
    return items


def align(plain: str, truth: str, regions: list[tuple[int, int, int]],
          leaf_of: Callable[[int], int]) -> tuple[list[Segment], bool]:
    """Segments of `truth` for the (start, end, field) regions of `plain`, and whether they are exact
    (the walks explain every character; otherwise the gaps between segments prove nothing)."""
    if plain == truth:
        return [(start, end, number, False) for start, end, number in regions], True
    items = _items(plain, regions)
    front, at, ahead = _forward(items, truth)
    if front == len(items) and at == len(truth):
        return ahead, True
    back, until, behind = _backward(items, truth, front, at)
    if back == front and until == at:
        return ahead + behind[::-1], True
    middle = _search(truth, at, until, _units(items[front:back], leaf_of))
    return ahead + middle + behind[::-1], False


def _forward(items: list[Item], truth: str) -> tuple[int, int, list[Segment]]:
    index, at = 0, 0
    found: list[Segment] = []
    while index < len(items):
        text, number = items[index]
        if number is None:
            if not truth.startswith(text, at):
                break
            at += len(text)
            index += 1
            continue
        follow = items[index + 1][0]
        last = index + 2 == len(items)
        for variant in candidates(text):
            end = at + len(variant)
            if truth.startswith(variant, at) and truth.startswith(follow, end) and (
                    not last or end + len(follow) == len(truth)):
                found.append((at, end, number, variant != text))
                at, index = end, index + 1
                break
        else:
            break
    return index, at, found


def _backward(items: list[Item], truth: str, floor_index: int, floor: int) -> tuple[int, int, list[Segment]]:
    index, at = len(items), len(truth)
    found: list[Segment] = []
    while index > floor_index:
        text, number = items[index - 1]
        if number is None:
            start = at - len(text)
            if start < floor or not truth.startswith(text, start):
                break
            at, index = start, index - 1
            continue
        before = items[index - 2][0] if index - 2 >= floor_index else ""
        for variant in candidates(text):
            start = at - len(variant)
            gap_start = start - len(before)
            if gap_start < floor or (index - 2 < floor_index and start != floor):
                continue
            if truth.startswith(variant, start) and truth.startswith(before, gap_start):
                found.append((start, at, number, variant != text))
                at, index = start, index - 1
                break
        else:
            break
    return index, at, found


def _units(items: list[Item], leaf_of: Callable[[int], int]) -> list[tuple[str, int, int | None]]:
    """Fields to search for: (text, first field, offset in the marked text); adjacent chunks of one
    input string are joined, so a search looks for the whole string rather than a short piece."""
    units: list[tuple[list[str], int, int]] = []
    offset, joined = 0, False
    for text, number in items:
        if number is not None and joined and leaf_of(units[-1][1]) == leaf_of(number):
            units[-1][0].append(text)
        elif number is not None:
            units.append(([text], number, offset))
        joined = number is not None
        offset += len(text)
    return [("".join(parts), number, at) for parts, number, at in units]


def search_fields(truth: str, texts: list[tuple[str, int]]) -> list[Segment]:
    """Last resort, when there is no marked rendering: find each field, in order, in the whole text."""
    return _search(truth, 0, len(truth), [(text, number, None) for text, number in texts], slack=1 << 16)


def _search(truth: str, low: int, high: int, units: list[tuple[str, int, int | None]],
            slack: int = SEARCH_SLACK) -> list[Segment]:
    """Each unit found in order in truth[low:high]. A find is refused when the next unit then has no
    place left after it (the find sits inside a later field, as ' QQQ ' inside a reply).

    Bounded: a find looks only a little past where the unit should be (its offset in the marked text,
    moved by how far the last find was from its own), and the whole search stops after WORK_PER_CHAR
    compared characters per character of text. Everything not found is unattributed.
    """
    budget = [WORK_PER_CHAR * (high - low) + (1 << 20)]
    shift = [0]

    def first(unit: int, start: int) -> tuple[int, int, bool] | None:
        text, _number, offset = units[unit]
        expected = start if offset is None else max(start, low + offset + shift[0])
        stop = min(high, expected + len(text) + slack)
        best: tuple[int, int, bool] | None = None
        for variant in candidates(text):
            found = _find_whole(truth, variant, start, stop, budget)
            if found >= 0 and (best is None or found < best[0]):
                best = (found, found + len(variant), variant != text)
        return best

    segments: list[Segment] = []
    cursor = low
    for unit, (_text, number, offset) in enumerate(units):
        hit = first(unit, cursor)
        if hit is None:
            continue
        if unit + 1 < len(units):
            following = first(unit + 1, cursor)
            if following is not None and following[0] < hit[1] and first(unit + 1, hit[1]) is None:
                continue
        segments.append((hit[0], hit[1], number, hit[2]))
        cursor = hit[1]
        if offset is not None:
            shift[0] = hit[0] - (low + offset)
    return _fill(segments, low, high)


def _find_whole(truth: str, text: str, start: int, stop: int, budget: list[int]) -> int:
    """The first place of `text` in truth[start:stop] that cuts no marker-shaped token in two (`think`
    is not found inside `<think>`: a field never takes part of the template's marker), or -1."""
    while text and budget[0] > 0 and stop > start:
        found = truth.find(text, start, stop)
        budget[0] -= (stop if found < 0 else found + len(text)) - start
        if found < 0 or not cuts_token(truth, found, found + len(text)):
            return found
        start = found + 1
    return -1


def cuts_token(truth: str, start: int, end: int) -> bool:
    """Whether truth[start:end] begins or ends inside a marker-shaped token of `truth`."""
    for edge in (start, end):
        for match in TOKENS.finditer(truth, max(0, edge - TOKEN_MAX), min(len(truth), edge + TOKEN_MAX)):
            if match.start() >= edge:
                break
            if match.start() + len(match.group(1)) > edge:
                return True
    return False


def _fill(segments: list[Segment], low: int, high: int) -> list[Segment]:
    """The found segments with everything between them (and around them) unattributed."""
    out: list[Segment] = []
    at = low
    for segment in segments:
        if segment[0] > at:
            out.append((at, segment[0], None, True))
        out.append(segment)
        at = segment[1]
    if high > at:
        out.append((at, high, None, True))
    return out
