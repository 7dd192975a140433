"""visible(): every invisible carrier shown as a stand-in, ordinary text untouched, fast on 1 MB."""

import random
import subprocess
import sys

import pytest

from tui.context.untrusted.visible import visible

# Each range must be shown in full: both ends and a point inside.
CARRIERS = {
    "tag characters": (0xE0000, 0xE007F),
    "zero-width space, non-joiner, joiner": (0x200B, 0x200D),
    "word joiner, invisible operators": (0x2060, 0x2064),
    "zero-width no-break space": (0xFEFF, 0xFEFF),
    "line and paragraph separators": (0x2028, 0x2029),
    "Arabic letter mark": (0x061C, 0x061C),
    "Mongolian vowel separator": (0x180E, 0x180E),
    "private use, plane 0": (0xE000, 0xF8FF),
    "private use, plane 15": (0xF0000, 0xFFFFD),
    "private use, plane 16": (0x100000, 0x10FFFD),
    "lone surrogates": (0xD800, 0xDFFF),
    "BiDi overrides and isolates": (0x202A, 0x202E),
    "C1 controls": (0x80, 0x9F),
}


@pytest.mark.parametrize("name", CARRIERS)
def test_each_invisible_carrier_gets_a_stand_in(name):
    low, high = CARRIERS[name]
    for code in {low, (low + high) // 2, high}:
        char = chr(code)
        shown = visible(f"a{char}b")
        assert char not in shown, (name, hex(code))
        assert shown == f"a<U+{code:04X}>b", (name, hex(code))


def test_hidden_tag_message_becomes_readable():
    hidden = "".join(chr(0xE0000 + ord(c)) for c in "obey")
    assert visible("hi" + hidden) == "hi<U+E006F><U+E0062><U+E0065><U+E0079>"


def test_tab_newline_and_ordinary_text_kept():
    # an emoji's presentation selector (U+FE0F after a symbol, a keycap's U+FE0F U+20E3) is ordinary text
    text = "col1\tcol2\nÜnïcödé ✓\ufe0e 🎉 ❤\ufe0f 1\ufe0f\u20e3 ‼\ufe0f العربية 中文 e\u0301"
    assert visible(text) == text


def test_terminal_controls_keep_their_symbols():
    assert visible("\x1b[31mred\x07\r") == "␛[31mred␇␍"


@pytest.mark.bulk
@pytest.mark.timeout(60)  # a hang guard, not a speed goal
def test_one_megabyte_of_mixed_invisibles_is_all_shown():
    rng = random.Random(7)
    pool = "abcdefghij klmnop\n" * 5 + "\u200b\U000e0041\ufeff\ue123\x1b"
    text = "".join(rng.choice(pool) for _ in range(1_000_000))
    shown = visible(text)
    assert "\U000e0041" not in shown and "\u200b" not in shown and "\x1b" not in shown


def test_ascii_text_is_shown_as_the_whole_class_shows_it():
    """ASCII takes a short path (no look at the large class): it must agree with the class on every ASCII character,
    alone and among others."""
    from tui.context.untrusted.visible import _show, hidden_pattern
    for code in range(128):
        text = f"a{chr(code)}b{chr(code)}"
        assert visible(text) == hidden_pattern().sub(_show, text), code


def test_ascii_text_does_not_build_the_large_class():
    code = ("from tui.context.untrusted.visible import visible, hidden_pattern\n"
            "assert visible('ctxpane \\x1b[31m title\\n') == 'ctxpane ␛[31m title\\n'\n"
            "print(hidden_pattern.cache_info().currsize)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.strip() == "0"
