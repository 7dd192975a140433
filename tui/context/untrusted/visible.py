"""Make any text safe to print: no terminal escapes, no invisible direction changes, no hidden text.

Model output, tool results and file contents reach the terminal only through `visible()`.
It never touches the document the model is sent; it changes only how text is displayed.

What is shown as a stand-in is one character class, computed once from `unicodedata`: the general
categories Cc, Cf, Co, Cs, Zl, Zp, every Default_Ignorable_Code_Point (variation selectors, Hangul
fillers, the combining grapheme joiner, tag characters...), blanks that are letters or symbols
(U+2800 BRAILLE PATTERN BLANK, U+16FE4 KHITAN SMALL SCRIPT FILLER), and Cn: code points this Python's
Unicode database does not know, noncharacters (U+FDD0..U+FDEF, U+xFFFE, U+xFFFF) included. Tab and
newline are kept. Cn is conservative on purpose: a character newer than the database (Python 3.11
knows Unicode 14, so U+13439..U+1343F, format controls since Unicode 15, are Cn here) may be invisible,
and an unassigned code point is never legitimate text.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cn", "Co", "Cs", "Zl", "Zp"})
# Default_Ignorable_Code_Point (Unicode DerivedCoreProperties); unicodedata does not expose the property.
DEFAULT_IGNORABLE = ((0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5),
                     (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164),
                     (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3),
                     (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF))
# Above plane 3 nothing is text: planes 4 to 13 and most of 14 are unassigned, the rest of plane 14 is
# tags and selectors, planes 15 and 16 are private use.
WHOLE_PLANES = ((0x40000, 0x10FFFF),)
SCANNED = 0x40000  # planes 0 to 3, looked up character by character
BLANKS = ((0x2800, 0x2800), (0x16FE4, 0x16FE4))  # drawn as nothing, yet of a letter or symbol category
KEPT = "\t\n"
# U+FE0E/U+FE0F choose text or emoji style for the symbol before them ("❤️", "1️⃣"): after a symbol they
# are ordinary text and shown plainly (a stand-in after every emoji would bury the text). Anywhere
# else, or doubled, they carry nothing visible, so they get a stand-in like every other selector.
PRESENTATION = "\ufe0e\ufe0f"
EMOJI_BASES_EXTRA = "\u203c\u2049\u2139\u3030\u303d"  # ‼ ⁉ ℹ 〰 〽: emoji bases outside the symbol categories
_NAMES = {"\x1b": "␛", "\r": "␍", "\x07": "␇", "\x08": "␈", "\x00": "␀"}


def _ranges(codes: list[int]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for code in codes:
        if runs and runs[-1][1] == code - 1:
            runs[-1] = (runs[-1][0], code)
        else:
            runs.append((code, code))
    return runs


def _class(runs: list[tuple[int, int]]) -> str:
    return "".join(re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in runs)


@lru_cache(maxsize=2)
def _hidden_runs(presentation: bool) -> tuple[str, str]:
    """Class bodies of every hidden character (never tab or newline): those up to U+FFFF, those above."""
    codes = {code for code in range(SCANNED) if unicodedata.category(chr(code)) in HIDDEN_CATEGORIES}
    for low, high in DEFAULT_IGNORABLE + BLANKS:
        codes.update(range(low, min(high, SCANNED - 1) + 1))
    codes.difference_update(map(ord, KEPT if presentation else KEPT + PRESENTATION))
    runs = _ranges(sorted(codes)) + list(WHOLE_PLANES)
    return _class([r for r in runs if r[1] <= 0xFFFF]), _class([r for r in runs if r[0] > 0xFFFF])


def hidden_any(presentation: bool = False, extra: str = "") -> str:
    """A regex for one hidden character (or one of `extra`, a class body such as `\\s`).

    `presentation`: include U+FE0E/U+FE0F, which `visible()` shows plainly after an emoji base.
    Python's re tests a class's characters up to U+FFFF in a bitmap but those above one range at a
    time, hundreds of ranges (Cn): so those are tested only for a character above U+FFFF.
    """
    low, high = _hidden_runs(presentation)
    return f"(?:[{extra}{low}]|(?=[\U00010000-\U0010ffff])[{high}])"


@lru_cache(maxsize=1)
def hidden_pattern() -> re.Pattern[str]:
    """One match per hidden character, U+FE0E/U+FE0F only where they follow no emoji base."""
    bases = [code for code in range(0x80, SCANNED) if unicodedata.category(chr(code)) in ("So", "Sm", "Sk")]
    bases += map(ord, EMOJI_BASES_EXTRA)
    lone_presentation = f"(?<![{_class(_ranges(sorted(bases)))}])[{PRESENTATION}](?!\u20e3)"
    return re.compile(f"{hidden_any()}|{lone_presentation}")


def _show(match: re.Match[str]) -> str:
    char: str = match.group(0)
    return _NAMES.get(char) or f"<U+{ord(char):04X}>"


# The only hidden characters ASCII has: text without them and without non-ASCII needs no look at the large class,
# which takes ~0.1 s to build (so a first frame of ASCII titles and labels never waits for it).
_ASCII_HIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f]")


def visible(text: str) -> str:
    """`text` with every control, format, BiDi, zero-width, default-ignorable (variation selectors, tag
    characters, fillers), private-use or surrogate character shown as a visible stand-in (`␛`,
    `<U+E0041>`); tab and newline are kept, and so is an emoji's presentation selector."""
    if text.isascii():
        return _ASCII_HIDDEN.sub(_show, text)
    return hidden_pattern().sub(_show, text)


# Text that leaves ctxpane for another program (the clipboard, a curl command a shell will run) must not be
# able to steer that program. A pasted ESC [ 2 0 1 ~ ends a shell's bracketed paste and the rest runs as typed;
# C1 controls (U+009B is a one-character CSI) and carriage returns do the same in some terminals; BiDi
# controls and line/paragraph separators make code read differently from how it runs (Trojan Source).
_PASTE_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def paste_safe(text: str) -> tuple[str, int]:
    """`text` made safe to paste into a terminal, and how many characters were changed: every control
    character other than tab and newline, and every BiDi control, becomes its visible stand-in (`␛`,
    `<U+009B>`); a CRLF line end becomes a newline."""
    changed = text.count("\r\n")
    text = text.replace("\r\n", "\n")
    safe, replaced = _PASTE_UNSAFE.subn(_show, text)
    return safe, changed + replaced


def json_paste_safe(text: str) -> str:
    """A JSON text with every paste-unsafe character inside its strings written as a `\\uXXXX` escape:
    the same JSON value, and no byte that a terminal or shell acts on (JSON's structure is ASCII, so every
    such character stands inside a string)."""
    return _PASTE_UNSAFE.sub(lambda match: f"\\u{ord(match.group(0)):04x}", text)
