"""Argument parsing shared by the subcommands: one error line, and numbers checked against their range."""

from __future__ import annotations

import argparse
import math
import re
from typing import Callable

from tui.errors import UsageError

# The same bounds as the session file's schema (tui/sessions/schema.py), so what a flag accepts a session holds.
CONTEXT_WINDOW = (1, 10 ** 8)
MAX_TOKENS = (0, 10 ** 7)
KEEP_LAST = (1, 10 ** 6)
STEP = (1, 100_000)

_WHOLE = re.compile(r"[+-]?[0-9]{1,30}")  # ASCII digits only: int() would also take "١٢", "1_000" and " 5 "


class QuietParser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2, like every other bad input
        raise UsageError(message)


def whole_number(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: a whole number from `low` to `high`; anything else is one clear line."""

    def parse(text: str) -> int:
        value = int(text) if _WHOLE.fullmatch(text) else None
        if value is None or not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be a whole number, at least {low} and at most {high} "
                                             f"(got {text[:40]!r})")
        return value

    return parse


def seconds(low: float, high: float) -> Callable[[str], float]:
    """An argparse type: a duration above `low` and up to `high` seconds (float() alone takes nan and inf)."""

    def parse(text: str) -> float:
        try:
            value = float(text) if text.isascii() else math.nan
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and low < value <= high):
            raise argparse.ArgumentTypeError(f"must be a number of seconds above {low:g} and at most {high:g} "
                                             f"(got {text[:40]!r})")
        return value

    return parse
