"""The session file, version 2: one JSON object a line, appended to, never rewritten (docs/session-format.md).

    {"format":"ctxpane-session","version":2,"id":"…","created":"…"}      the first line: what the file is
    {"t":"x","h":H,"v":<exact JSON text>}   a part of a request body (a message, the tools), its exact text once
    {"t":"m","h":H,"v":{…}}                  a session message (or "w": the part holding its wire fields, and
                                             "v": ctxpane's own fields: provenance, id, pinned, incomplete)
    {"t":"r","n":N,"d":{…},"b":{…}}          request N: its figures as a change (log_diff) from request N-1's,
                                             and its body: the frame and the parts it is made of
    {"t":"r","n":N,"d":{…}}                  request N changed (its reply streamed, was settled): the change
    {"t":"st","d":{…},"m":{…},"br":[…]}      the session changed: its settings as a change, its messages as a
                                             list change (which messages, by H), its branches when they changed

Each append is a run of whole lines written at once after everything it refers to, so a file cut anywhere (a
kill -9 in the middle of a write) holds every append up to the last complete line; a last line without its
newline (and the NULs a power cut leaves after it) is left out when the file is read, and cut off before the next
append. The writer keeps every value within this reader's bounds (tui/sessions/bounds.py). A part's H is the first 32 hex
digits of the sha256 of its text, a message's of its record's JSON: each is written once, however many requests
send it. Reading (this module) parses and checks each line and folds it into the session's last state and each
request's figures (tui/sessions/log_state.py holds them); the session is built from that state in
tui/sessions/log_session.py, where a request's body is rebuilt from its parts only when it is read
(RequestRecord.body), byte for byte as it was sent. Writing is tui/sessions/log_writer.py.
"""

from __future__ import annotations

import hashlib
import re

import msgspec

from tui.sessions.log_diff import BadChange, apply, apply_list
from tui.sessions.log_state import Json, LogState, _completed
from tui.sessions.model import FORMAT, MAX_NEXT_ID, SessionFormatError
from tui.sessions.safe_io import structure_problem, text_problem
from tui.sessions.schema_types import MAX_MESSAGES

__all__ = ["LOG_VERSION", "body_text_problem", "is_log", "read_log"]

LOG_VERSION = 2
SETTINGS = ("title", "created", "updated", "endpoint", "template", "tokenizer", "policy", "fences", "variables",
            "tools", "params", "next_id", "bounded", "draft")
WIRE_KEYS = ("role", "content", "name", "tool_calls", "tool_call_id", "reasoning_content")
OWN_KEYS = frozenset({"provenance", "pinned", "incomplete", "id"})
MIN_NAMED = 64  # a reply's content this long is written as the message it became, when one holds it
KEEP_CONTENTS = 8  # the latest messages whose content a reply may name
CHECKED = 3  # the last requests compared with what was written at every append (older ones are settled)
_BLOB_HEAD = b'{"t":"x","h":"'
_BLOB_HEAD_LENGTH = len(_BLOB_HEAD) + 32 + len(b'","v":')


def part_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _dumps(value: Json) -> str:
    """A line of ctxpane's own, as msgspec writes it: reading it, msgspec writes the same bytes (see _decode)."""
    return msgspec.json.encode(value).decode("utf-8")


def is_log(raw: bytes) -> bool:
    """Whether these bytes are a version-2 session file (its first line says so), not the JSON of version 1."""
    first = raw[:raw.find(b"\n")] if b"\n" in raw[:65536] else raw[:65536]
    return first.startswith(b'{"format":"ctxpane-session","version":') and first.rstrip().endswith(b"}") \
        and b'"layout":"lines"' in first


class _Line(msgspec.Struct):
    t: str = ""


def read_log(raw: bytes) -> LogState:
    """Every line of a version-2 file, checked and folded; raises SessionFormatError (one clause, with the line).

    A tail after the last whole line is left out (LogState.cut): half a line a kill left, or the NUL bytes a power
    cut leaves where the last write's blocks never reached the disk. NULs anywhere else are damage: refused."""
    text = raw.rstrip(b"\x00")
    end = text.rfind(b"\n") + 1
    unended = end and _whole_line(text[end:])  # the last write lost only its newline: the line is kept
    if unended:
        end = len(text)
    problem = text_problem(raw[:end] or text)
    if problem:
        raise SessionFormatError(problem)
    cut = len(raw) - end
    lines = raw[:end].split(b"\n")[:-1] if end else []
    if unended:
        lines.append(text[text.rfind(b"\n") + 1:])
    if not lines:
        raise SessionFormatError("is not a whole session file: its first line was cut short")
    header = _decode(lines[0], 1)
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise SessionFormatError("holds JSON lines, but not a ctxpane session")
    state = LogState(header, complete=end, cut=cut, nuls=len(raw) - len(text), unended=bool(unended))
    checked: set[str] = set()
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        try:
            _fold(state, line, number, checked)
        except BadChange as exc:
            raise SessionFormatError(f"line {number}: {exc}") from None
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            if isinstance(exc, SessionFormatError):
                raise
            raise SessionFormatError(f"line {number}: not a session line ctxpane writes "
                                     f"({type(exc).__name__}: {str(exc)[:120]})") from None
    return state


def _whole_line(tail: bytes) -> bool:
    """Whether the bytes after the last newline are a whole line (a JSON object), not half of one."""
    if not tail.strip() or not tail.endswith(b"}"):
        return False
    try:
        return isinstance(msgspec.json.decode(tail), dict)
    except (msgspec.DecodeError, RecursionError):
        return False


def body_text_problem(raw: bytes) -> str | None:
    """Why this file's reader would refuse a request body of these bytes (a byte order mark, a key twice in one
    object, nesting past 64, an integer past 2**63, not JSON as it reads it); None when it reads them back. The tap
    asks before it records a body as sent: a file it writes must open again."""
    problem = text_problem(raw)
    if problem:
        return problem
    try:
        _decode(raw, 1, "body")
    except SessionFormatError as exc:
        return str(exc).removeprefix("body 1").lstrip(": ")
    return None


def _decode(line: bytes, number: int, where: str = "line") -> Json:
    """A line (or a part's text) as a JSON value, with the file-wide bounds: no key twice in one object, nesting at
    most 64 deep, no integer past 2**63. A line as ctxpane writes it (msgspec writes it again to the same bytes, few
    brackets, no long run of digits) is known to keep them without walking it; any other goes the long way."""
    try:
        value = msgspec.json.decode(line)
    except (msgspec.DecodeError, RecursionError):
        raise SessionFormatError(f"{where} {number} is not valid JSON") from None
    if line.count(b"{") + line.count(b"[") <= _SHALLOW and msgspec.json.encode(value) == line \
            and (sum(map(line.count, _DIGITS)) < 19 or _LONG_DIGITS.search(line) is None):
        return value
    _value, problem = structure_problem(line)
    if problem:
        raise SessionFormatError(f"{where} {number} {problem}" if problem.startswith(("is ", "has "))
                                 else f"{where} {number}: {problem}")
    return value


_SHALLOW = 60  # brackets in a line (strings' included): fewer, and it cannot nest past the bound
_LONG_DIGITS = re.compile(rb"[0-9]{19}")
_DIGITS = [bytes([d]) for d in b"0123456789"]


def part_value(state: "LogState", ident: str) -> Json:
    """A part's text parsed, with the file-wide bounds (a part is parsed only when it is used)."""
    return _decode(state.parts[ident].encode("utf-8", "surrogatepass"), ident[:12], "part")  # type: ignore[arg-type]


def _fold(state: LogState, line: bytes, number: int, checked: set[str]) -> None:
    if line.startswith(_BLOB_HEAD) and line[_BLOB_HEAD_LENGTH - 6:_BLOB_HEAD_LENGTH] == b'","v":' \
            and line.endswith(b"}"):
        # A part: its text is its bytes, checked against its hash; it is parsed only when it is used.
        ident = _hash(line[len(_BLOB_HEAD):len(_BLOB_HEAD) + 32].decode("ascii", "replace"), number)
        try:
            text = line[_BLOB_HEAD_LENGTH:-1].decode("utf-8")
        except UnicodeDecodeError:
            raise SessionFormatError(f"line {number} is not UTF-8 text") from None
        if part_hash(text) != ident:
            raise SessionFormatError(f"line {number}: the part's text does not have its hash {ident[:12]}… "
                                     "(the file was changed)")
        state.parts[ident] = text
        return
    value = _decode(line, number)
    if not isinstance(value, dict):
        raise SessionFormatError(f"line {number} is not an object")
    kind = value.get("t")
    if kind == "x":
        ident = _hash(value.get("h"), number)
        found = value.get("s")
        if not isinstance(found, str):
            raise SessionFormatError(f"line {number}: a part not laid out as ctxpane writes it (its exact text "
                                     "cannot be told)")
        if part_hash(found) != ident:
            raise SessionFormatError(f"line {number}: the part's text does not have its hash {ident[:12]}… "
                                     "(the file was changed)")
        state.parts[ident] = found
    elif kind == "m":
        ident = _hash(value.get("h"), number)
        own = value.get("v")
        if not isinstance(own, dict):
            raise SessionFormatError(f"line {number}: a message that is not an object")
        if "w" in value:
            wire = part_value(state, _hash(value["w"], number))
            if not isinstance(wire, dict):
                raise SessionFormatError(f"line {number}: a message whose wire part is not an object")
            own = {**{k: v for k, v in wire.items() if k in WIRE_KEYS}, **own}
        state.messages[ident] = own
    elif kind == "r":
        index = value.get("n")
        if not isinstance(index, int) or isinstance(index, bool) or not 1 <= index <= len(state.records) + 1:
            raise SessionFormatError(f"line {number}: request {str(index)[:12]} does not follow the requests "
                                     "before it")
        index -= 1
        if index == len(state.records):
            body = _completed(value.get("b"), state.bodies[-1] if state.bodies else None)
            base = state.initial if index else {}  # (request N-1 as its first line wrote it)
            state.records.append(apply(base, value.get("d", {}), state.records[index - 1] if index else None,
                                       state.message_text, state.unpacked))
            state.initial = state.records[-1]
            state.bodies.append(body)
            _check_body(state, body, index, number, checked)
        else:
            state.records[index] = apply(state.records[index], value.get("d", {}),
                                         state.records[index - 1] if index else None, state.message_text,
                                         state.unpacked)
        state.id_floor = max(state.id_floor, _ids_named(value.get("d", {})))
    elif kind == "st":
        state.settings = apply(state.settings, value.get("d", {}), budget=state.unpacked)
        if "m" in value:
            shown = apply_list(state.shown, value["m"])
            added = value["m"].get("a", []) if isinstance(value["m"], dict) else []
            missing = next((h for h in added if h not in state.messages), None)
            if missing is not None:
                raise SessionFormatError(f"line {number}: names a message the file does not hold ({missing[:12]}…)")
            state.shown = shown
        if "br" in value:
            branches, added = _branches(state.branches, value["br"])
            if not isinstance(branches, list) or not all(isinstance(b, dict) and isinstance(b.get("m"), list)
                                                         for b in added):
                raise SessionFormatError(f"line {number}: branches that are not a list of branches")
            for branch in added:
                if any(h not in state.messages for h in branch["m"]):
                    raise SessionFormatError(f"line {number}: a branch names a message the file does not hold")
            state.branches = branches
    else:
        raise SessionFormatError(f"line {number}: unknown line kind {str(kind)[:20]!r}")


def _branches(before: list[Json], written: Json) -> tuple[Json, list[Json]]:
    """The branches after an `st` line's `br`, and those it added: the whole list, or a list change from the
    branches before (an edit keeps one more branch: only it is written, not every branch again)."""
    if isinstance(written, dict):
        branches = apply_list(before, written)
        added = written.get("a", [])
        return branches, added if isinstance(added, list) else []
    return written, written if isinstance(written, list) else []


def _ids_named(change: Json) -> int:
    """One past the highest numbered id a request's change adds (message_ids, dropped): each id is read once."""
    highest = -1
    for part in ("s", "p"):
        values = change.get(part, {}) if isinstance(change, dict) else {}
        if not isinstance(values, dict):
            continue
        for key in ("message_ids", "dropped"):
            found = values.get(key)
            if part == "p" and isinstance(found, list) and len(found) == 2:
                found = found[1]
            if isinstance(found, list):
                for item in found:
                    ident = item.get("message_id", "") if isinstance(item, dict) else item
                    numbered = _NUMBERED.fullmatch(ident) if isinstance(ident, str) else None
                    if numbered:
                        highest = max(highest, int(numbered.group(1)))
    return min(highest + 1, MAX_NEXT_ID)


_NUMBERED = re.compile(r"m([0-9]{1,13})")
_HEX32 = re.compile(r"[0-9a-f]{32}")


def _hash(value: Json, number: int) -> str:
    if not isinstance(value, str) or not _HEX32.fullmatch(value):
        raise SessionFormatError(f"line {number}: a part's hash is not 32 hex digits")
    return value


def _check_body(state: LogState, body: Json, index: int, number: int, checked: set[str]) -> None:
    """A request's body refers only to parts before it and its arrays follow from the request before it, within
    the bounds of a body (its parts pass the session schema when the body is rebuilt: checked_body)."""
    if not isinstance(body, dict) or not isinstance(body.get("k"), list) or not isinstance(body.get("h"), list) \
            or len(body["k"]) != len(body["h"]) + 1 or not all(isinstance(p, str) for p in body["k"]):
        raise SessionFormatError(f"line {number}: request {index + 1} has no body ctxpane can rebuild")
    for hole in body["h"]:
        if not isinstance(hole, dict) or not isinstance(hole.get("key"), str):
            raise SessionFormatError(f"line {number}: a body part without its key")
        key = hole["key"]
        if "x" in hole:
            ident = hole["x"]
            if ident not in state.parts:
                raise SessionFormatError(f"line {number}: the body names a part the file does not hold")
            continue
        layout = hole.get("l")
        if not isinstance(layout, list) or len(layout) != 3 or not all(isinstance(p, str) for p in layout):
            raise SessionFormatError(f"line {number}: a body array without its layout")
        if "f" in hole and hole["f"] != index:  # (1-based: the request before this one)
            raise SessionFormatError(f"line {number}: a body array that does not follow the request before it")
        added = hole.get("a")
        if not isinstance(added, list):
            raise SessionFormatError(f"line {number}: a body array without its items")
        for ident in added:
            if not isinstance(ident, str) or ident not in state.parts:
                raise SessionFormatError(f"line {number}: the body names a part the file does not hold")
        before = state.lengths.get(key) if "f" in hole else None
        drop, keep = hole.get("d", 0), hole.get("k", 0)
        if not (isinstance(drop, int) and isinstance(keep, int)
                and 0 <= drop <= keep <= (before[1] if before is not None and before[0] == index - 1 else 0)):
            raise SessionFormatError(f"line {number}: a body array that does not fit the request before it")
        state.lengths[key] = (index, keep - drop + len(added))
        if state.lengths[key][1] > MAX_MESSAGES:
            raise SessionFormatError(f"line {number}: field `requests[{index}].body.{key}`: more than "
                                     f"{MAX_MESSAGES:,} items")
