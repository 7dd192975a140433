"""Make any text safe to print: no terminal escapes, no invisible direction changes, no hidden text.

Model output, tool results and file contents reach the terminal only through `visible()`.
It never touches the document the model is sent; it changes only how text is displayed.
"""

from __future__ import annotations

import re

# Shown as stand-ins, in one pass (tab and newline are kept):
_UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f"  # C0 controls but tab and newline, DEL, C1 controls
    "\u00ad\u061c\u180e"  # soft hyphen, Arabic letter mark, Mongolian vowel separator
    "\u200b-\u200f\u2028-\u202e\u2060-\u206f"  # zero-width, line/paragraph separators, BiDi marks and overrides
    "\ufeff\ufff9-\ufffb"  # zero-width no-break space (BOM), interlinear annotation marks
    "\ud800-\udfff"  # lone surrogates (a str from surrogateescape or bad JSON can hold them)
    "\ue000-\uf8ff\U000f0000-\U0010ffff"  # private use (planes 0, 15 and 16)
    "\U000e0000-\U000e007f]")  # tag characters: the invisible prompt-injection channel
_NAMES = {"\x1b": "␛", "\r": "␍", "\x07": "␇", "\x08": "␈", "\x00": "␀"}


def _show(match: re.Match) -> str:
    char = match.group(0)
    return _NAMES.get(char) or f"<U+{ord(char):04X}>"


def visible(text: str) -> str:
    """`text` with every control, BiDi, zero-width, tag, private-use or surrogate character shown
    as a visible stand-in (`␛`, `<U+E0041>`); tab and newline are kept."""
    return _UNSAFE.sub(_show, text)
