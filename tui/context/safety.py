"""Make any text safe to print: no terminal escapes, no invisible direction changes.

Model output, tool results and file contents reach the terminal only through `visible()`.
It never touches the document the model is sent; it changes only how text is displayed.
"""

from __future__ import annotations

import re

# C0 controls except tab and newline, DEL, C1 controls, and the Unicode direction overrides.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_NAMES = {"\x1b": "␛", "\r": "␍", "\x07": "␇", "\x08": "␈", "\x00": "␀"}


def _show(match: re.Match) -> str:
    char = match.group(0)
    return _NAMES.get(char) or f"<U+{ord(char):04X}>"


def visible(text: str) -> str:
    """`text` with every control or BiDi character replaced by a visible stand-in."""
    return _UNSAFE.sub(_show, text)
