"""What the session reader accepts, applied before writing (issue 41): a line nested at most MAX_DEPTH levels deep,
counted from the line's own top, and no integer of 2**63 or more (tui/sessions/session_log.py `_decode`).

A value past one of them is kept in a form the reader takes, and said: an integer that large as its decimal text,
an array or object nested too deep as its JSON text, each with a note naming where. Nothing is dropped: the text
holds the value whole. A value within both bounds is returned as it is (the common case, decided by a walk of its
arrays and objects only: its texts are never looked into).
"""

from __future__ import annotations

from typing import Any

import msgspec

from tui.context.untrusted.outside_files import MAX_DEPTH, MAX_INT

Json = Any
MAX_NOTES = 20  # notes kept for one record or session: past them, one more says how many were not listed

_CONTAINERS = (dict, list)


def reach(value: Json) -> tuple[int, bool]:
    """How many arrays and objects deep `value` nests, and whether it holds an integer past the bound. Only its
    arrays and objects are walked, each looked at in C for what it holds (a list of 100,000 strings costs one
    pass of `map`, a long text nothing)."""
    if not isinstance(value, _CONTAINERS):
        return 0, type(value) is int and abs(value) >= MAX_INT
    deepest, huge = 0, False
    stack: list[tuple[Json, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        children = item.values() if isinstance(item, dict) else item
        if isinstance(item, list) and _only_text(item):
            continue
        kinds = set(map(type, children))
        if int in kinds and not huge:
            huge = any(type(child) is int and abs(child) >= MAX_INT for child in children)
        if dict in kinds or list in kinds:
            stack.extend((child, depth + 1) for child in children if isinstance(child, _CONTAINERS))
    return deepest, huge


def _only_text(items: list[Json]) -> bool:
    """Whether a list holds texts only (a reply's generated tokens): joined in C, which stops at the first that is not."""
    try:
        "".join(items)
    except TypeError:
        return False
    return True


def fits(value: Json, levels: int = MAX_DEPTH) -> bool:
    """Whether `value` keeps within both bounds with `levels` levels of room."""
    depth, huge = reach(value)
    return depth <= levels and not huge


def within_bounds(value: Json, levels: int, where: str = "") -> tuple[Json, list[str]]:
    """`value` as the reader takes it when its top sits where `levels` levels of nesting are left, and the notes of
    what was kept as text (empty: `value` itself, unchanged)."""
    if fits(value, levels):
        return value, []
    notes: list[str] = []
    return _bounded(value, levels, where, notes), notes


def bounded_fields(values: dict[str, Json], levels: int, where: str = "") -> tuple[dict[str, Json], list[str]]:
    """Each of an object's values within the bounds when they sit `levels` levels from the line's limit (the object
    itself takes one of them); a copy only when one of them changed."""
    notes: list[str] = []
    out = values
    for key, value in values.items():
        kept, said = within_bounds(value, levels - 1, f"{where}{key}")
        if said:
            if out is values:
                out = dict(values)
            out[key] = kept
            notes.extend(said)
    return out, notes


def merged_notes(*groups: list[str]) -> list[str]:
    """Notes once each, in order, at most MAX_NOTES (the rest counted in one more)."""
    seen = list(dict.fromkeys(note for group in groups for note in group if not note.startswith("and ")))
    if len(seen) <= MAX_NOTES:
        return seen
    return [*seen[:MAX_NOTES], f"and {len(seen) - MAX_NOTES:,} more values kept as text"]


def _bounded(value: Json, levels: int, where: str, notes: list[str]) -> Json:
    if isinstance(value, bool) or value is None or isinstance(value, (str, float)):
        return value
    if isinstance(value, int):
        if abs(value) < MAX_INT:
            return value
        notes.append(f"`{_shown(where)}`: an integer of {len(str(abs(value))):,} digits, past the file's 2**63: "
                     "kept as text")
        return str(value)
    if levels < 1:  # no room for one more array or object: the whole of it as its JSON text
        notes.append(f"`{_shown(where)}`: nested past the file's {MAX_DEPTH} levels: kept as its JSON text")
        return msgspec.json.encode(value).decode("utf-8")
    if isinstance(value, dict):
        return {key: _bounded(item, levels - 1, f"{where}.{key}" if where else str(key), notes)
                for key, item in value.items()}
    if isinstance(value, list):
        return [_bounded(item, levels - 1, f"{where}[{index}]", notes) for index, item in enumerate(value)]
    return value


def _shown(where: str) -> str:
    """A place short enough for a note of one line (a key may hold anything: a newline, a thousand characters)."""
    text = where.replace("\n", " ").replace("\r", " ")
    return text if len(text) <= 200 else text[:100] + "…" + text[-99:]
