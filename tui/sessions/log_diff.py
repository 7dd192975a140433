"""What changed between two JSON values, written small: the session log's records and states are changes.

A change to an object is `{"s": {key: value}, "d": {key: change}, "x": [key], "a": {key: text}, "p": {key: [n, items]},
"c": {key: change}}`, each part optional: `s` sets a value, `d` changes an object inside, `x` removes keys, `a` appends
to a string (a reply as it streams), `p` keeps the first n items of a list and appends the rest (ids, generated
tokens), `c` sets an object made by changing the one at the same key in a value alike (`like`: the request before,
whose cost, usage and figures differ from this one's by a few numbers), `z` sets a long, repetitive text (a reply's
raw stream: the same frame around each piece) as base64 of its zlib compression, `y` the same, compressed with the
text it replaces as zlib's dictionary (a reply's raw stream against the request before's), `r` sets a text that a message of
the file holds (a reply's content, which became the assistant message: `{key: H}`, resolved by the reader).
Applying changes never modifies the value given: what it does not change is shared.
"""

from __future__ import annotations

from typing import Any

import base64
import math
import zlib
from typing import Callable, TypeVar

import msgspec

Json = Any
MIN_APPEND = 32  # a string at least this long that only grew is written as what it gained
MIN_KEEP = 4  # a list sharing at least this many first items is written as what follows them
MIN_SQUEEZE = 2048  # a text this long is written compressed when that makes it 4 times smaller (not prose)
MIN_LIKE = 256  # a text this long is written compressed against the text it replaces, when that is 4 times smaller
MAX_SQUEEZED = 64 * 1024 * 1024  # what a compressed text may unpack to


class Unpacked:
    """What one file's compressed texts may still unpack to: zlib makes a thousand times its bytes, so a small file
    of many compressed texts would otherwise fill the memory (bounded as a session file is: what version 1 held)."""

    def __init__(self, limit: int) -> None:
        self.left = limit


def copy_json(value: Json) -> Json:
    """A deep copy of a JSON value (msgspec: fast)."""
    return msgspec.json.decode(msgspec.json.encode(value))


def shared_copy(value: Any) -> Json:
    """A copy of a JSON value whose containers are new and whose strings are the same objects (they never change):
    the figures a writer keeps of a request then cost no second copy of its long texts (a reply's megabytes, in every
    conversation the tap holds open). What is not plain JSON (an enum, a tuple's items…) is copied as copy_json does."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None or kind is float and math.isfinite(value):
        return value  # (not NaN: JSON writes it as null, and a NaN kept would never equal itself again)
    if kind is list:
        return [shared_copy(item) for item in value]
    if kind is dict and all(type(key) is str for key in value):
        return {key: shared_copy(item) for key, item in value.items()}
    return copy_json(value)


def diff(old: dict[str, Json], new: dict[str, Json], like: dict[str, Json] | None = None) -> dict[str, Json]:
    """The change that turns `old` into `new` ({} when they are equal); `like`, a value alike that the reader has
    too, lets an object new here be written as a change from the one `like` holds."""
    sets: dict[str, Json] = {}
    inner: dict[str, Json] = {}
    grown: dict[str, str] = {}
    kept: dict[str, Json] = {}
    alike: dict[str, Json] = {}
    squeezed: dict[str, str] = {}
    against: dict[str, str] = {}
    for key, value in new.items():
        before = old.get(key) if key in old else None
        if key in old and (before is value or type(before) is type(value) and before == value):
            continue
        model = like.get(key) if like is not None else None
        if isinstance(value, dict) and not isinstance(before, dict) and isinstance(model, dict) and value:
            change = diff(model, value)
            if len(_dumped(change)) < len(_dumped(value)):
                alike[key] = change
                continue
        if isinstance(value, str) and len(value) >= MIN_LIKE and not (
                isinstance(before, str) and len(before) >= MIN_APPEND and value.startswith(before)):
            if isinstance(before, str) and len(before) >= MIN_LIKE:
                packed = _squeeze(value, before)
                if packed is not None:
                    against[key] = packed
                    continue
            packed = _squeeze(value) if len(value) >= MIN_SQUEEZE else None
            if packed is not None:
                squeezed[key] = packed
                continue
        if key not in old:
            sets[key] = value
            continue
        if isinstance(before, dict) and isinstance(value, dict):
            change = diff(before, value, model if isinstance(model, dict) else None)
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
    for name, part in (("s", sets), ("d", inner), ("a", grown), ("p", kept), ("c", alike), ("z", squeezed),
                       ("y", against)):
        if part:
            out[name] = part
    if gone:
        out["x"] = gone
    return out


def _squeeze(text: str, reference: str | None = None) -> str | None:
    raw = text.encode("utf-8", "surrogatepass")
    if reference is None:
        packer = zlib.compressobj(6)
    else:
        packer = zlib.compressobj(6, zdict=reference.encode("utf-8", "surrogatepass")[-32768:])
    packed = base64.b64encode(packer.compress(raw) + packer.flush()).decode("ascii")
    return packed if len(packed) * 4 <= len(raw) else None


def _unsqueeze(packed: Json, reference: Json = None, budget: Unpacked | None = None) -> str:
    if not isinstance(packed, str):
        raise BadChange("a compressed text that is not a string")
    try:
        if reference is None:
            unpacker = zlib.decompressobj()
        elif isinstance(reference, str):
            unpacker = zlib.decompressobj(zdict=reference.encode("utf-8", "surrogatepass")[-32768:])
        else:
            raise BadChange("a text compressed against one that is not there")
        limit = MAX_SQUEEZED if budget is None else min(MAX_SQUEEZED, budget.left)
        if limit <= 0:  # (zlib reads a max_length of 0 as no limit at all)
            raise BadChange("compressed texts that unpack to more than a session file may hold")
        raw = unpacker.decompress(base64.b64decode(packed, validate=True), limit)
        if unpacker.unconsumed_tail or not unpacker.eof and len(raw) >= limit:
            raise BadChange("a compressed text that unpacks to more than 64 MiB" if limit == MAX_SQUEEZED
                            else "compressed texts that unpack to more than a session file may hold")
        if budget is not None:
            budget.left -= len(raw)
        return raw.decode("utf-8", "surrogatepass")
    except BadChange:
        raise
    except (ValueError, zlib.error, UnicodeDecodeError):
        raise BadChange("a compressed text that does not unpack") from None


def _dumped(value: Json) -> bytes:
    return msgspec.json.encode(value)


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


Resolve = Callable[[str], str]


def apply(old: dict[str, Json], change: dict[str, Json], like: dict[str, Json] | None = None,
          resolve: Resolve | None = None, budget: Unpacked | None = None) -> dict[str, Json]:
    """`old` with `change` applied (a new dict; `old` is not modified); `like` as given to `diff`; `resolve` gives the
    text of a message by its H (for `r`); `budget` bounds what compressed texts unpack to (`z`, `y`)."""
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
        model = like.get(key) if like is not None else None
        out[key] = apply(before, value, model if isinstance(model, dict) else None, resolve, budget)
    for key, value in _part(change, "c").items():
        model = like.get(key) if like is not None else None
        if not isinstance(model, dict):
            raise BadChange(f"`{key[:40]}` has no object alike to change")
        out[key] = apply(model, value, budget=budget)
    for key, value in _part(change, "z").items():
        out[key] = _unsqueeze(value, budget=budget)
    for key, value in _part(change, "y").items():
        out[key] = _unsqueeze(value, old.get(key), budget)
    for key, value in _part(change, "r").items():
        if resolve is None or not isinstance(value, str):
            raise BadChange(f"`{key[:40]}` names a message that cannot be read here")
        out[key] = resolve(value)
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


Item = TypeVar("Item")


def list_change(old: list[Item], new: list[Item]) -> dict[str, Json]:
    """How `new` follows from `old` (hashes, branches): `{"d": dropped from the start, "k": kept up to, "a":
    added}` (d 0 left out)."""
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
