"""Writing outside text to stdout: exact for a pipe or a file, never able to drive a terminal.

A pipe or a file gets the exact text (a script, a diff, a hash must see what was sent). A terminal
would act on escapes carried by a message or a session file (OSC 52 sets the clipboard, others retitle
the window or hide text), and a person reading gains nothing from raw bytes: there, text gets the
stand-ins of `visible()` and JSON is ASCII-escaped (the same JSON value, nothing left to interpret).
"""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

from tui.context.untrusted.visible import visible


def is_terminal(out: TextIO) -> bool:
    try:
        return out.isatty()
    except (AttributeError, ValueError):  # a closed or unusual stream
        return False


def write_text(text: str, out: TextIO | None = None) -> None:
    """`text` as it is (UTF-8, nothing added) unless `out` is a terminal, which gets stand-ins."""
    out = out or sys.stdout
    if is_terminal(out):
        out.write(visible(text))
        out.flush()
        return
    binary = getattr(out, "buffer", None)
    if binary is None:  # a text-only stream (a test's StringIO): the same characters
        out.write(text)
        return
    out.flush()
    binary.write(text.encode("utf-8"))
    binary.flush()


def json_text(value: Any, out: TextIO | None = None) -> str:
    """One line of JSON; to a terminal, with every non-ASCII character escaped (C1 controls, BiDi marks)."""
    return json.dumps(value, ensure_ascii=is_terminal(out or sys.stdout))
