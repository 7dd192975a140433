"""The one bounded reader for files from outside: config, themes, price tables, tokenizer configs, sessions.

Every such file is read the same way: a regular file only (a FIFO is refused, never waited on), at most a
given size, then parsed with bounds on nesting, so that no file of any depth or size can stop the program:
a problem is one line, naming the file and what is wrong (`FileProblem`). Python's TOML and JSON parsers
recurse once per level of nesting: 60,000 `[` in 120 KB raised RecursionError, which nothing caught.
"""

from __future__ import annotations

import json
import os
import stat
import tomllib
from pathlib import Path
from typing import Any

MAX_DEPTH = 64  # nesting of arrays and tables (objects), the whole file counted from its top level
MAX_INT = 2 ** 63


class FileProblem(ValueError):
    """A file from outside that cannot be used as it is: one line, naming the file."""


def read_bounded(path: Path, limit: int) -> bytes:
    """The bytes of `path` if it is a regular file of at most `limit` bytes; never blocks on a FIFO."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except FileNotFoundError:
        raise FileProblem(f"no such file: {path}") from None
    except PermissionError:
        raise FileProblem(f"cannot read {path}: permission denied") from None
    except OSError as exc:
        raise FileProblem(f"cannot read {path}: {exc.strerror or exc}") from None
    except ValueError:  # a NUL byte in the name
        raise FileProblem(f"cannot read {path!r}: not a usable file name") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise FileProblem(f"{path} is a directory, not a file")
        if not stat.S_ISREG(info.st_mode):
            raise FileProblem(f"{path} is not a regular file (a FIFO, device or socket): not read")
        if info.st_size > limit:
            raise FileProblem(f"{path} is {_size(info.st_size)}, over the {_size(limit)} allowed")
        return _read_at_most(fd, path, limit)
    except OSError as exc:
        raise FileProblem(f"cannot read {path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def _size(count: int) -> str:
    return f"{count // (1024 * 1024)} MiB" if count >= 1024 * 1024 else f"{count:,} bytes"


def _read_at_most(fd: int, path: Path, limit: int) -> bytes:
    chunks, total = [], 0
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
        total += len(chunk)
        if total > limit:  # the file grew after fstat
            raise FileProblem(f"{path} is over the {_size(limit)} allowed")
    return b"".join(chunks)


def _text(raw: bytes | str, origin: str, limit: int) -> str:
    size = len(raw.encode("utf-8", "surrogatepass")) if isinstance(raw, str) else len(raw)
    if size > limit:
        raise FileProblem(f"{origin} is {_size(size)}, over the {_size(limit)} allowed")
    if isinstance(raw, str):
        return raw
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise FileProblem(f"{origin} is not UTF-8 text") from None


def nesting_problem(data: Any) -> str | None:
    """Too deep, or an integer past 2**63 anywhere: checked without recursion (a dotted TOML key nests too)."""
    stack: list[tuple[Any, int, str]] = [(data, 1, "")]
    while stack:
        value, depth, where = stack.pop()
        if isinstance(value, (dict, list)):
            if depth > MAX_DEPTH:
                return f"is nested too deeply: more than {MAX_DEPTH} levels at `{where[:120].lstrip('.')}`"
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for key, item in items:
                if isinstance(item, (dict, list, int)):
                    step = f".{key}" if isinstance(value, dict) else f"[{key}]"
                    stack.append((item, depth + 1, where + step if len(where) < 200 else where))
        elif isinstance(value, int) and not isinstance(value, bool) and abs(value) >= MAX_INT:
            return f"has an integer out of range (at most 2**63) at `{where.lstrip('.')[:120]}`"
    return None


def toml_too_deep(text: str) -> bool:
    """Does this TOML text nest past MAX_DEPTH, by brackets or by the parts of one dotted key? A scan of the
    text outside strings and comments, in linear time, before tomllib sees it: tomllib recurses once per
    bracket, and takes time quadratic in the parts of a dotted key (60,000 parts: over a minute).

    A key's parts are counted from the last `=`, `,`, `{`, `[` or line end, digits or not: a dotted run in a
    value (`1.1.1…`) is no valid TOML, so counting it too only refuses what tomllib would refuse slowly."""
    depth = parts = 0
    index, size = 0, len(text)
    while index < size:
        char = text[index]
        if char in QUOTES:
            index = _after_string(text, index)
            if index < 0:
                return False  # an unclosed string: tomllib says so, quickly
            continue
        if char == "#":
            newline = text.find("\n", index)
            index = size if newline == -1 else newline
            continue
        if char in "[{":
            depth, parts = depth + 1, 0
        elif char in "]}":
            depth = max(depth - 1, 0)
        elif char in "=,\n":
            parts = 0
        elif char == ".":
            parts += 1
        if depth > MAX_DEPTH or parts >= MAX_DEPTH:
            return True
        index += 1
    return False


QUOTES = "\"'"


def _after_string(text: str, start: int) -> int:
    """Where the string opened at `start` ends (the index after it), or -1 when it is not closed. A basic string
    (double quotes) honours backslash escapes; a multi-line one may end with one or two quotes more."""
    quote = text[start]
    multi = text.startswith(quote * 3, start)
    delimiter = quote * 3 if multi else quote
    at = start + len(delimiter)
    while True:
        end = text.find(delimiter, at)
        if end == -1:
            return -1
        if quote == '"' and _escaped(text, end):
            at = end + 1
            continue
        end += len(delimiter)
        extra = 0
        while multi and extra < 2 and end < len(text) and text[end] == quote:
            end, extra = end + 1, extra + 1
        return end


def _escaped(text: str, at: int) -> bool:
    backslashes = 0
    while at - backslashes - 1 >= 0 and text[at - backslashes - 1] == "\\":
        backslashes += 1
    return backslashes % 2 == 1


def parse_toml(raw: bytes | str, origin: str, limit: int = 1024 * 1024) -> dict[str, Any]:
    """A TOML document from outside, as a dict; FileProblem with one line for any problem."""
    text = _text(raw, origin, limit)
    if toml_too_deep(text):
        raise FileProblem(f"{origin} is nested too deeply (more than {MAX_DEPTH} levels of arrays, tables or "
                          "dotted key parts)")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise FileProblem(f"{origin} is not valid TOML: {str(exc).splitlines()[0][:200]}") from None
    except ValueError as exc:  # an integer of more than 4,300 digits
        raise FileProblem(f"{origin} is not usable TOML: {str(exc).splitlines()[0][:200]}") from None
    except RecursionError:
        raise FileProblem(f"{origin} is nested too deeply (more than {MAX_DEPTH} levels of arrays and tables)") \
            from None
    problem = nesting_problem(data)
    if problem:
        raise FileProblem(f"{origin} {problem}")
    return data


def parse_json(raw: bytes | str, origin: str, limit: int = 16 * 1024 * 1024) -> Any:
    """A JSON document from outside; FileProblem with one line for any problem."""
    text = _text(raw, origin, limit)
    try:
        data = json.loads(text)
    except RecursionError:
        raise FileProblem(f"{origin} is nested too deeply (more than {MAX_DEPTH} levels of arrays and objects)") \
            from None
    except ValueError as exc:
        raise FileProblem(f"{origin} is not valid JSON: {str(exc)[:200]}") from None
    problem = nesting_problem(data)
    if problem:
        raise FileProblem(f"{origin} {problem}")
    return data


def read_toml(path: Path, limit: int = 1024 * 1024) -> dict[str, Any]:
    return parse_toml(read_bounded(path, limit), str(path), limit)


def read_json(path: Path, limit: int = 16 * 1024 * 1024) -> Any:
    return parse_json(read_bounded(path, limit), str(path), limit)
