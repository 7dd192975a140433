"""Random bursts of editing keys, and what a one-line editor should hold after them (issue 19: no key is lost).

The expectation is computed by `LineEditor`, a reference editor, never written down by hand."""

from __future__ import annotations

import random
import string
import unicodedata

from textual import events
from textual.keys import REPLACED_KEYS, _character_to_key, _get_unicode_name_from_key

EDITING = ("backspace", "delete", "left", "right", "home", "end")
# Every letter: e, d, n, x, y… are bindings somewhere (the transcript, a confirmation, the browser's list).
PRINTABLE = string.ascii_letters + string.digits + " /-.,?:_"


class LineEditor:
    """What a one-line editor does with each key: the expected text and cursor."""

    def __init__(self, text: str = "", smart_home: bool = False) -> None:
        self.text, self.cursor, self.smart_home = text, len(text), smart_home

    def press(self, key: str) -> None:
        before, after = self.text[:self.cursor], self.text[self.cursor:]
        if key == "backspace" and before:
            self.text, self.cursor = before[:-1] + after, self.cursor - 1
        elif key == "delete":
            self.text = before + after[1:]
        elif key == "left":
            self.cursor = max(0, self.cursor - 1)
        elif key == "right":
            self.cursor = min(len(self.text), self.cursor + 1)
        elif key == "home":
            self.cursor = self._home()
        elif key == "end":
            self.cursor = len(self.text)
        elif len(key) == 1:
            self.text, self.cursor = before + key + after, self.cursor + 1

    def _home(self) -> int:
        """A TextArea's Home goes to the first non-blank first, then to 0 (an Input's: to 0)."""
        first = len(self.text) - len(self.text.lstrip()) if self.text.strip() else 0
        if self.smart_home and (self.cursor == 0 or self.cursor > first):
            return first
        return 0

    def after(self, keys: list[str]) -> "LineEditor":
        for key in keys:
            self.press(key)
        return self


def random_burst(rng: random.Random, length: int = 24, printable: str = PRINTABLE) -> list[str]:
    """Starts with Home or End, so the expectation never depends on where a dialog put its cursor."""
    keys = [rng.choice(("home", "end"))]
    for _ in range(length - 1):
        keys.append(rng.choice(EDITING) if rng.random() < 0.35 else rng.choice(printable))
    return keys


def key_event(key: str) -> events.Key:
    """The event a terminal's key makes, named as Textual's pilot names it."""
    name = _character_to_key(key) if len(key) == 1 and not key.isalnum() else key
    try:
        char = unicodedata.lookup(_get_unicode_name_from_key(REPLACED_KEYS.get(name, name)))
    except KeyError:
        char = name if len(name) == 1 else None
    return events.Key(name, char)


def post(app, keys: list[str]) -> None:
    """Every key sent as the terminal's driver sends what it read, before the app handles any of them."""
    for key in keys:
        event = key_event(key)
        event.set_sender(app)
        app._driver.send_message(event)
