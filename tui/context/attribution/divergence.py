"""Attribution when the marked rendering does not explain the true one: it fails closed.

Marks can change what a template does. A test such as `content.startswith('<tool_response>')` or
`tool_call.id == message.tool_call_id` comes out otherwise on marked text, so the marked rendering
takes another branch (or fails). Its template text is then not the true rendering's, and walking one
against the other can match the template's text against a copy of it inside a field: a forged
`<|im_start|>system` in reasoning, or in a tool name a template copies into a later header, would read
as the template's own. So when the walks do not explain the whole text, nothing they matched counts as
template text. Instead:

- only a string holding a marker-shaped token (marking.STRUCTURE) can write a turn header, a rule block
  or a fence header: each such string is looked for in the true text, as it is, with its ends stripped
  or JSON-escaped, and EVERY occurrence is claimed for its message (a copy the template made elsewhere,
  or text that merely equals it: neither is ever the template's own);
- where the walks and the middle search put other strings is kept, to show them;
- the rest is the template's own (`marker`), except where it holds a token of a marker-bearing string
  that was not fully found (found nowhere, used in part by the marked rendering, found fewer times than
  the marked rendering used it, or left unsearched when the work bound ran out). Every such token, with
  the text after it up to the next token, is `unattributed`, which the reader never trusts: a header
  that string could have written there is reported, and so is the body it could have written after it
  (`content[:30]` cutting a forged turn); the template's other tokens stay its own (a reply split at
  `</think>` costs the template's `</think>`, not every turn header).

Work is bounded: the searches together scan at most SCAN_PER_CHAR times the text plus SCAN_FLOOR
characters (each copy found costing HIT_COST more), however many strings there are; token scans are
linear.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Iterable

from tui.context.attribution.alignment import SEARCH_SLACK, Segment, candidates, cuts_token
from tui.context.attribution.marking import STRUCTURE, TOKEN_MAX, TOKENS, Field, holds_token

SCAN_PER_CHAR = 64
SCAN_FLOOR = 1 << 26
HIT_COST = 256  # what a copy found costs besides the characters compared: steps of Python, not of find()


@dataclass
class Leaf:
    """One input string, whole: its chunks' field numbers and how the marked rendering used it."""
    text: str
    numbers: list[int]
    copies: int = 0  # whole copies in the marked rendering
    partial: bool = False  # the marked rendering holds a piece of it, or its chunks unevenly


def leaves(fields: list[Field]) -> list[Leaf]:
    """The input strings again, each from its chunks in order."""
    out: list[Leaf] = []
    parts: list[list[str]] = []
    for number, item in enumerate(fields):
        if out and fields[out[-1].numbers[0]].leaf == item.leaf:
            out[-1].numbers.append(number)
            parts[-1].append(item.text)
        else:
            out.append(Leaf("", [number]))
            parts.append([item.text])
    for leaf, pieces in zip(out, parts):
        leaf.text = "".join(pieces)
    return out


def note_marked_use(found: list[Leaf], fields: list[Field], plain: str,
                    regions: Iterable[tuple[int, int, int]]) -> None:
    """Count the whole copies of each string in the marked rendering; note any used in part."""
    counts = [0] * len(fields)
    cut = [False] * len(fields)
    for start, end, number in regions:
        counts[number] += 1
        cut[number] = cut[number] or plain[start:end] != fields[number].text
    for leaf in found:
        uses = [counts[number] for number in leaf.numbers]
        leaf.copies = min(uses)
        leaf.partial = max(uses) != leaf.copies or any(cut[number] for number in leaf.numbers)


class _Budget:
    def __init__(self, size: int):
        self.left = size


def _occurrences(truth: str, needle: str, budget: _Budget) -> tuple[list[int], bool]:
    """Every start of `needle` in `truth`, overlapping ones too, and whether the search got to the end."""
    found: list[int] = []
    at = 0
    while budget.left > 0:
        hit = truth.find(needle, at)
        budget.left -= (len(truth) if hit < 0 else hit + len(needle) + HIT_COST) - at
        if hit < 0:
            return found, True
        found.append(hit)
        at = hit + 1
    return found, False


def _copies(truth: str, text: str, budget: _Budget) -> tuple[list[tuple[int, str]], bool]:
    """(start, variant) of every copy of `text` (as it is, stripped, or JSON-escaped), and whether the
    search finished. A copy is found by the stripped text, then widened to the longest variant there
    (only the whitespace around it is compared again)."""
    core = text.strip()
    ends = []  # (variant, whitespace before the core, whitespace after it), longest first
    for variant in sorted(candidates(text), key=len, reverse=True):
        lead = len(variant) - len(variant.lstrip())
        ends.append((variant, variant[:lead], variant[lead + len(core):]))
    starts, done = _occurrences(truth, core, budget)
    copies = []
    for at in starts:
        for variant, before, after in ends:
            budget.left -= len(before) + len(after)
            if at >= len(before) and truth.startswith(before, at - len(before)) and \
                    truth.startswith(after, at + len(core)):
                copies.append((at - len(before), variant))
                break
    escaped = json.dumps(core, ensure_ascii=False)[1:-1]  # as HF's tojson writes it
    if escaped != core:
        more, finished = _occurrences(truth, escaped, budget)
        copies += [(at, escaped) for at in more]
        done = done and finished
    return copies, done


Copy = tuple[int, int, Leaf, str]  # start, end, whose copy, the variant found


def claim_structure(truth: str, found: list[Leaf]) -> tuple[list[Copy], set[str]]:
    """Every copy of every marker-bearing string, and the tokens (in lower case) of those not fully found.

    Equal strings (a tag a user typed in many messages) are searched once; their copies go to them in
    order, any extra to the last.
    """
    budget = _Budget(SCAN_PER_CHAR * len(truth) + SCAN_FLOOR)
    groups: dict[str, list[Leaf]] = {}
    for leaf in found:
        if leaf.text.strip() and STRUCTURE.search(leaf.text):
            groups.setdefault(leaf.text, []).append(leaf)
    claims: list[Copy] = []
    unsafe: set[str] = set()
    for text, same in sorted(groups.items(), key=lambda group: -len(group[0])):  # long strings first: few copies
        copies, done = _copies(truth, text, budget) if budget.left > 0 else ([], False)
        for index, (start, variant) in enumerate(sorted(copies)):
            claims.append((start, start + len(variant), same[min(index, len(same) - 1)], variant))
        expected = sum(max(1, leaf.copies) for leaf in same)
        if not done or len(copies) < expected or any(leaf.partial for leaf in same):
            unsafe.update(match.group(1).lower() for match in TOKENS.finditer(text))
    return claims, unsafe


def _union(claims: list[Copy], fields: list[Field]) -> list[Segment]:
    """The copies as segments without overlaps: a copy starting inside an earlier one keeps only what
    lies beyond it, so every claimed character stays claimed (none is dropped to make the spans tile).
    A verbatim copy left whole becomes one segment per chunk, so it does not read as transformed."""
    out: list[Segment] = []
    reach = 0
    for start, end, leaf, variant in sorted(claims, key=lambda claim: (claim[0], -claim[1])):
        if end <= reach:
            continue
        if start < reach or variant != leaf.text:
            out.append((max(start, reach), end, leaf.numbers[0], True))
        else:
            for number in leaf.numbers:
                size = len(fields[number].text)
                out.append((start, start + size, number, False))
                start += size
        reach = end
    return out


def _shown(truth: str, hints: list[Segment], taken: list[Segment], claimed: set[int]) -> list[Segment]:
    """The walks' and the search's segments of fields, where no claim is, cutting no token in two.
    A field of a string no claim is for, which the walk put inside a claimed copy, is looked for just
    after that copy (Gemma 4's tool result, found by the walk inside the copied tool name)."""
    out: list[Segment] = []
    first, reach = 0, 0
    for low, high, number, transformed in sorted(hint for hint in hints if hint[2] is not None):
        start = max(low, reach)
        while first < len(taken) and taken[first][1] <= start:
            first += 1
        pieces, index = [], first
        while start < high:  # the hint less the claims inside it
            if index < len(taken) and taken[index][0] < high:
                pieces.append((start, taken[index][0]))
                start, index = max(start, taken[index][1]), index + 1
            else:
                pieces.append((start, high))
                break
        pieces = [(a, b) for a, b in pieces if b > a and not cuts_token(truth, a, b)]
        if not pieces and number not in claimed:
            while index < len(taken) and taken[index][0] <= start:  # the copy's other chunks follow on
                start, index = max(start, taken[index][1]), index + 1
            stop = taken[index][0] if index < len(taken) else len(truth)
            pieces = _moved(truth, truth[low:high], start, stop)
            out += [(a, b, number, transformed) for a, b in pieces]
        else:
            out += [(a, b, number, transformed or (a, b) != (low, high)) for a, b in pieces]
        reach = max([reach, high] + [b for _a, b in pieces])
    return out


def _moved(truth: str, text: str, start: int, stop: int) -> list[tuple[int, int]]:
    """Where `text` is first found in truth[start:stop], near `start`, if it holds no token and cuts none."""
    found = truth.find(text, start, min(stop, start + len(text) + SEARCH_SLACK)) if text else -1
    if found < 0 or holds_token(text, 0, len(text)) or cuts_token(truth, found, found + len(text)):
        return []
    return [(found, found + len(text))]


def _unsafe_gaps(truth: str, segments: list[Segment], unsafe: set[str]) -> list[Segment]:
    """Unattributed segments where the text between `segments` holds a token in `unsafe`."""
    if not unsafe:
        return []
    out, at = [], 0
    for start, end, _number, _transformed in [*segments, (len(truth), len(truth), None, False)]:
        if start > at:
            out += _unsafe_tokens(truth, at, start, unsafe)
        at = max(at, end)
    return out


def _unsafe_tokens(truth: str, start: int, end: int, unsafe: set[str]) -> list[Segment]:
    """Each token of `unsafe` starting in truth[start:end], with the text after it up to the next token
    (`<|im_start|>system\nObey.`): a header the string could have written starts with such a token, and
    the body after it may be the string's too, so both are reported; other tokens stay the template's."""
    tokens = [match for match in TOKENS.finditer(truth, start, min(len(truth), end + TOKEN_MAX))
              if match.start() < end]
    out: list[Segment] = []
    for index, match in enumerate(tokens):
        if match.group(1).lower() in unsafe:  # the reader ignores case, and `| upper` keeps a header one
            stop = tokens[index + 1].start() if index + 1 < len(tokens) else end
            out.append((match.start(), min(stop, end), None, True))
    return out


def attribute(truth: str, fields: list[Field], found: list[Leaf], hints: list[Segment]) -> list[Segment]:
    """Segments of `truth` that never call a possible copy of a marker-bearing string the template's."""
    claims, unsafe = claim_structure(truth, found)
    taken = _union(claims, fields)
    claimed = {number for _start, _end, leaf, _variant in claims for number in leaf.numbers}
    segments = sorted(taken + _shown(truth, hints, taken, claimed))
    return sorted(segments + _unsafe_gaps(truth, segments, unsafe))
