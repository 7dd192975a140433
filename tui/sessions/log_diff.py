"""What changed between two JSON values, written small: the session log's records and states are changes.

A change to an object is `{"s": {key: value}, "d": {key: change}, "x": [key], "a": {key: text}, "p": {key: [n, items]}}`,
each part optional: `s` sets a value, `d` changes an object inside, `x` removes keys, `a` appends to a string (a
reply as it streams), `p` keeps the first n items of a list and appends the rest (ids, generated tokens).
Applying changes never modifies the value given: what it does not change is shared.
"""

from __future__ import annotations

from typing import Any

import msgspec

Json = Any
MIN_APPEND = 32  # a string at least this long that only grew is written as what it gained
MIN_KEEP = 4  # a list sharing at least this many first items is written as what follows them


def copy_json(value: Json) -> Json:
    """A deep copy of a JSON value (msgspec: fast)."""
    return msgspec.json.decode(msgspec.json.encode(value))


def diff(old: dict[str, Json], new: dict[str, Json]) -> dict[str, Json]:
    """The change that turns `old` into `new` ({} when they are equal)."""
    sets: dict[str, Json] = {}
    inner: dict[str, Json] = {}
    grown: dict[str, str] = {}
    kept: dict[str, Json] = {}
    for key, value in new.items():
        if key not in old:
            sets[key] = value
            continue
        before = old[key]
        if before is value or type(before) is type(value) and before == value:
            continue
        if isinstance(before, dict) and isinstance(value, dict):
            change = diff(before, value)
            if change:
                inner[key] = change
        elif isinstance(before, str) and isinstance(value, str) and len(before) >= MIN_APPEND \
                and value.startswith(before):
            grown[key] = value[len(before):]
        elif isinstance(before, list) and isinstance(value, list) and len(before) >= MIN_KEEP:
            shared = _shared(before, value)
            if shared >= MIN_KEEP:
                kept[key] = [shared, value[shared:]]
            else:
                sets[key] = value
        else:
            sets[key] = value
    gone = [key for key in old if key not in new]
    out: dict[str, Json] = {}
    for name, part in (("s", sets), ("d", inner), ("a", grown), ("p", kept)):
        if part:
            out[name] = part
    if gone:
        out["x"] = gone
    return out


def _shared(before: list[Json], after: list[Json]) -> int:
    if len(after) >= len(before) and after[:len(before)] == before:
        return len(before)
    count = 0
    for one, other in zip(before, after):
        if one != other:
            break
        count += 1
    return count


class BadChange(ValueError):
    """A change that does not fit the value it is applied to (a file edited by hand, or damaged)."""


def apply(old: dict[str, Json], change: dict[str, Json]) -> dict[str, Json]:
    """`old` with `change` applied (a new dict; `old` is not modified)."""
    if not isinstance(change, dict):
        raise BadChange("a change is not an object")
    out = dict(old)
    for key in _keys(change.get("x", [])):
        out.pop(key, None)
    for key, value in _part(change, "s").items():
        out[key] = value
    for key, value in _part(change, "d").items():
        before = out.get(key, {})
        if not isinstance(before, dict):
            raise BadChange(f"`{key[:40]}` is not an object to change")
        out[key] = apply(before, value)
    for key, value in _part(change, "a").items():
        before = out.get(key)
        if not isinstance(before, str) or not isinstance(value, str):
            raise BadChange(f"`{key[:40]}` is not a text to append to")
        out[key] = before + value
    for key, value in _part(change, "p").items():
        before = out.get(key)
        if not isinstance(before, list) or not isinstance(value, list) or len(value) != 2 \
                or not isinstance(value[0], int) or not isinstance(value[1], list) or not 0 <= value[0] <= len(before):
            raise BadChange(f"`{key[:40]}` is not a list to keep the start of")
        out[key] = before[:value[0]] + value[1]
    return out


def _part(change: dict[str, Json], name: str) -> dict[str, Json]:
    part = change.get(name, {})
    if not isinstance(part, dict):
        raise BadChange(f"the change's `{name}` is not an object")
    return part


def _keys(value: Json) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(key, str) for key in value):
        raise BadChange("the change's `x` is not a list of keys")
    return value


def list_change(old: list[str], new: list[str]) -> dict[str, Json]:
    """How `new` follows from `old`: `{"d": dropped from the start, "k": kept up to, "a": added}` (d 0 left out)."""
    if len(new) >= len(old) and new[:len(old)] == old:  # the usual case: the list only grew
        return {"k": len(old), "a": new[len(old):]}
    drop = 0
    if old and new and new[0] != old[0]:
        try:  # the client trimmed the start: the list goes on from a later item
            drop = old.index(new[0])
        except ValueError:
            drop = len(old)
    keep = drop
    limit = min(len(old), drop + len(new))
    while keep < limit and old[keep] == new[keep - drop]:
        keep += 1
    if keep == drop:
        drop = keep = 0
    out: dict[str, Json] = {"k": keep, "a": new[keep - drop:]}
    if drop:
        out["d"] = drop
    return out


def apply_list(old: list[str], change: Json) -> list[str]:
    if not isinstance(change, dict):
        raise BadChange("a list change is not an object")
    drop, keep, added = change.get("d", 0), change.get("k", 0), change.get("a", [])
    if not (isinstance(drop, int) and isinstance(keep, int) and isinstance(added, list)
            and 0 <= drop <= keep <= len(old)):
        raise BadChange("a list change does not fit the list before it")
    return old[drop:keep] + added
