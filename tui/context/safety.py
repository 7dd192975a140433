"""Make any text safe to print: no terminal escapes, no invisible direction changes, no hidden text.

Model output, tool results and file contents reach the terminal only through `visible()`.
It never touches the document the model is sent; it changes only how text is displayed.

What is shown as a stand-in is one character class, computed once from `unicodedata`: the general
categories Cc, Cf, Co, Cs, Zl, Zp and every Default_Ignorable_Code_Point (variation selectors,
Hangul fillers, the combining grapheme joiner, tag characters...), except tab and newline.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Co", "Cs", "Zl", "Zp"})
# Default_Ignorable_Code_Point (Unicode DerivedCoreProperties); unicodedata does not expose the property.
DEFAULT_IGNORABLE = ((0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5),
                     (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164),
                     (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3),
                     (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF))
WHOLE_PLANES = ((0xE0000, 0xE0FFF), (0xF0000, 0x10FFFF))  # tags and selectors; private use (planes 15, 16)
SCANNED = 0x20000  # planes 0 and 1 hold every other character of these categories
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
def hidden_class(presentation: bool = False) -> str:
    """The body of a regex character class of every hidden character (never tab or newline).

    `presentation`: include U+FE0E/U+FE0F, which `visible()` shows plainly after an emoji base.
    """
    codes = {code for code in range(SCANNED) if unicodedata.category(chr(code)) in HIDDEN_CATEGORIES}
    for low, high in DEFAULT_IGNORABLE:
        codes.update(range(low, min(high, SCANNED - 1) + 1))
    codes.difference_update(map(ord, KEPT if presentation else KEPT + PRESENTATION))
    runs = _ranges(sorted(codes)) + list(WHOLE_PLANES)
    return _class(runs)


@lru_cache(maxsize=1)
def hidden_pattern() -> re.Pattern:
    """One match per hidden character, U+FE0E/U+FE0F only where they follow no emoji base."""
    bases = [code for code in range(0x80, SCANNED) if unicodedata.category(chr(code)) in ("So", "Sm", "Sk")]
    bases += map(ord, EMOJI_BASES_EXTRA)
    lone_presentation = f"(?<![{_class(_ranges(sorted(bases)))}])[{PRESENTATION}](?!\u20e3)"
    return re.compile(f"[{hidden_class()}]|{lone_presentation}")


def _show(match: re.Match) -> str:
    char = match.group(0)
    return _NAMES.get(char) or f"<U+{ord(char):04X}>"


def visible(text: str) -> str:
    """`text` with every control, format, BiDi, zero-width, default-ignorable (variation selectors, tag
    characters, fillers), private-use or surrogate character shown as a visible stand-in (`␛`,
    `<U+E0041>`); tab and newline are kept, and so is an emoji's presentation selector."""
    return hidden_pattern().sub(_show, text)
