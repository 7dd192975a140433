"""Errors shared by the command line and the app, and the one-line form every error is shown in."""

from __future__ import annotations

import re
from typing import Iterable

MAX_ERROR_LINE = 400


class UsageError(Exception):
    """Bad input from the user: printed as one line on stderr, exit status 2."""


def one_line(text: str, limit: int = MAX_ERROR_LINE) -> str:
    """`text` as one printable line: control and BiDi characters shown, newlines too, length bounded."""
    from tui.context.untrusted.visible import visible

    flat = visible(str(text)).replace("\r\n", "␤").replace("\n", "␤").replace("\t", " ")
    return flat if len(flat) <= limit else flat[:limit - 1] + "…"


_AT = re.compile(r" - at (`key` in )?`(\$[^`]*)`")


def schema_error_line(message: str) -> str:
    """A msgspec ValidationError's text as "field `a.b[0]`: expected int, got str".

    Errors raised inside a nested check carry several " - at `$…`" suffixes, innermost first;
    they are joined into one path from the outermost field down.
    """
    missing = re.match(r"Object missing required field `([^`]*)`", message)
    if missing:  # name the missing field in the path, like any other
        message = f"required but missing - at `$.{missing.group(1)}`" + message[missing.end():]
    found = _AT.findall(message)
    paths = [path for _key, path in found]
    reason = _AT.sub("", message).strip()
    reason = reason.replace("` | `", " or ").replace(" | ", " or ").replace("`", "")
    reason = reason[:1].lower() + reason[1:]
    if any(key for key, _path in found):
        reason = "a key: " + reason
    if not paths:
        return reason
    field = "".join(path[1:] for path in reversed(paths)).lstrip(".")
    if not field.replace("[...]", ""):  # inside free-form JSON, where msgspec does not name the keys
        return reason
    return f"field `{field}`: {reason}"


def closest(word: str, known: Iterable[str]) -> str | None:
    """The known name `word` was most likely meant to be (a misspelling), or None."""
    import difflib
    found = difflib.get_close_matches(word, sorted(known), n=1, cutoff=0.6)
    return found[0] if found else None


def unknown_key_line(key: object, where: str, known: Iterable[str]) -> str:
    """"`temprature`: unknown key in [params]; did you mean `temperature`?" — one line, the closest known key."""
    name = one_line(str(key), 60)
    close = closest(str(key).lower(), known)
    hint = f"; did you mean `{close}`?" if close else " (ignored)"
    return f"`{name}`: unknown key in {where}{hint}"
