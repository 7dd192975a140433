"""Reading a JSON file someone else may have made, and writing files that hold a conversation.

Reading never blocks (a FIFO named like a session is refused, not waited on), never follows a
file past its size limit, and every problem becomes one line: which file, what is wrong.
Files written here get mode 0600, like the session itself: they hold the conversation.
"""

from __future__ import annotations

import json
import os
import re
import stat
import tempfile
from pathlib import Path
from typing import Any

from tui.context.untrusted.outside_files import MAX_DEPTH, FileProblem, nesting_problem, read_bounded
from tui.errors import one_line, schema_error_line

BOM = b"\xef\xbb\xbf"
MAX_SESSION_BYTES = 256 * 1024 * 1024  # a session file's bound (tui/sessions/store.py)
_LONE_SURROGATE = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})")


class SessionFileError(Exception):
    """A session file (or any JSON file given on the command line) that cannot be used; one line."""


def about(subject: object, problem: str) -> str:
    """"x.json is empty", "x.json: field `title`: …": a problem clause after the thing it is about."""
    return f"{subject} {problem}" if problem.startswith(("is ", "has ", "holds ", "starts ")) else f"{subject}: {problem}"


def read_regular_file(path: Path, limit: int) -> bytes:
    """The bytes of `path` if it is a regular file of at most `limit` bytes; never blocks on a FIFO."""
    try:
        return read_bounded(path, limit)
    except FileProblem as exc:
        raise SessionFileError(str(exc)) from None


def text_problem(raw: bytes) -> str | None:
    """Why these bytes cannot be JSON text at all, before any parsing."""
    if not raw.strip():
        return "is empty"
    if raw.startswith(BOM):
        return "starts with a byte order mark (BOM), which JSON text must not have: save it as UTF-8 without one"
    if b"\x00" in raw[:65536]:
        return "is a binary file, not JSON text"
    return None


def decode_problem(raw: bytes, exc: Exception) -> str:
    """One clause for a msgspec decode failure: where in the file, and what."""
    import msgspec

    if isinstance(exc, RecursionError):
        return f"is nested too deeply (more than {MAX_DEPTH} levels of arrays and objects)"
    if isinstance(exc, msgspec.ValidationError):
        return explain(schema_error_line(str(exc)))
    message = str(exc)
    if "UTF-8" in message or _not_utf8(raw):
        return "is not UTF-8 text"
    if any(word in message for word in ("truncated", "escape", "surrogate")) and _LONE_SURROGATE.search(raw):
        return "has a lone UTF-16 surrogate escape (like \\ud800), which stands for no character"
    if "truncated" in message:
        return "is not valid JSON: it ends early (truncated?)"
    found = re.search(r"\(byte (\d+)\)", message)
    reason = re.sub(r"^JSON is malformed: |\s*\(byte \d+\)", "", message)
    if found is None:
        return f"is not valid JSON: {reason}"
    offset = int(found.group(1))
    if raw[offset:offset + 3] in (b"NaN", b"Inf") or raw[offset:offset + 4] == b"-Inf":
        reason = "NaN and Infinity are not JSON numbers"
    line = raw.count(b"\n", 0, offset) + 1
    column = offset - (raw.rfind(b"\n", 0, offset) + 1) + 1
    return f"is not valid JSON at line {line}, column {column}: {reason}"


def explain(line: str) -> str:
    """Add the allowed values to an "invalid enum value" line, for the enumerations a person edits."""
    from tui.context.policy.truncation import POLICIES
    from tui.context.messages import ROLES, SOURCES

    allowed = {"role": ROLES, "source": SOURCES, "policy.name": POLICIES}
    found = re.match(r"field `([^`]*)`: invalid enum value", line)
    if found:
        for suffix, values in allowed.items():
            if found.group(1).endswith(suffix):
                return f"{line} (expected one of {', '.join(values)})"
    return line


def _not_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


class _Duplicate(ValueError):
    pass


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _value in pairs:
            if key in seen:
                raise _Duplicate(key)
            seen.add(key)
    return result


def structure_problem(raw: bytes) -> tuple[Any, str | None]:
    """The parsed value and what is wrong with its shape: a key given twice, too deep, a huge integer.

    `raw` must already be valid JSON (msgspec said so); this pass sees what msgspec hides:
    duplicated keys (it keeps the last one silently; other tools keep the first).
    """
    try:
        data = json.loads(raw, object_pairs_hook=_unique_pairs)
    except _Duplicate as exc:
        return None, f"has the key {json.dumps(str(exc))[:80]} twice in one object (ambiguous: refused)"
    except RecursionError:
        return None, f"is nested too deeply (more than {MAX_DEPTH} levels of arrays and objects)"
    except ValueError as exc:
        return None, f"is not valid JSON: {exc}"
    return data, _shape_problem(data)


def _shape_problem(data: Any) -> str | None:
    problem = nesting_problem(data)
    if problem and problem.startswith("has an integer out of range"):
        where = problem.split("`")[1] if "`" in problem else ""
        return f"field `{one_line(where, 120)}`: integer out of range (at most 2**63)"  # a key may hold a newline
    return problem


def write_private(path: Path, text: str) -> None:
    """Write an export: a new or regular file gets mode 0600, atomically; a FIFO or device is written in place.

    Replacing `/dev/stdout` (or anything that is not a regular file) with a file would be wrong,
    so those are opened for writing as they are.
    """
    try:
        info = os.stat(path)
    except FileNotFoundError:
        info = None
    if info is not None and not stat.S_ISREG(info.st_mode):
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(21, "is a directory", str(path))
        with open(path, "w", encoding="utf-8") as file:
            file.write(text)
        return
    write_atomic(path, text)


def write_atomic(path: Path, text: str | bytes) -> None:
    """Write to a temporary file (mode 0600) beside the target, flush it to disk, then rename over the target."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(text.encode("utf-8") if isinstance(text, str) else text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    _sync_dir(path.parent)


def _sync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
