"""The message input: Enter sends, Alt+Enter or Ctrl+J adds a new line, Tab completes a /command."""

from __future__ import annotations

from textual import events
from textual._ansi_sequences import ANSI_SEQUENCES_KEYS
from textual.document._wrapped_document import WrappedDocument
from textual.message import Message

from tui.controller.slash import completed, completions

from tui.app.safe_inputs import SafeTextArea


class _KeyName:
    """What Textual's key table holds for a sequence: a key named by its `value`."""

    def __init__(self, value: str) -> None:
        self.value = value


# Alt+Enter reaches the app as ESC CR (tmux, most terminals without the kitty protocol). Textual reads ESC as
# alt, then finds Enter in its table and drops the alt: Alt+Enter sent the message. Named here, it adds a line.
ANSI_SEQUENCES_KEYS.setdefault("\x1b\r", (_KeyName("alt+enter"),))


class _KnownHeight(WrappedDocument):
    """Textual sums every line's wrap count for `height`, and asks for it once per drawn row: with a
    megabyte draft that is most of a keystroke. One row of `_offset_to_line_info` per wrapped line
    (kept by `wrap` and `wrap_range`) gives the same number at once."""

    @property
    def height(self) -> int:
        rows = getattr(self, "_offset_to_line_info", None)
        return len(rows) if rows is not None else super().height


NEW_LINE_KEYS = ("alt+enter", "ctrl+j", "shift+enter")


class Composer(SafeTextArea):
    DEFAULT_CSS = """
    Composer { height: auto; min-height: 3; max-height: 12; border: tall $primary 50%; }
    Composer:focus { border: tall $primary; }
    """

    class Submitted(Message):
        def __init__(self, composer: "Composer", text: str) -> None:
            super().__init__()
            self.composer, self.text = composer, text

    class Recall(Message):
        """Up or Down asks for an older or newer prompt from the history (tui/controller/recall.py)."""

        def __init__(self, composer: "Composer", older: bool) -> None:
            super().__init__()
            self.composer, self.older = composer, older
            self.text = composer.text  # what it held then: keys typed since win over the recall

    # Keys it handles in _on_key, not as bindings (Enter sends, Up/Down recall, Tab completes or moves the focus)
    OWN_KEYS = ("enter", "up", "down", "tab", *NEW_LINE_KEYS)

    def __init__(self, **kwargs) -> None:
        super().__init__(soft_wrap=True, show_line_numbers=False, tab_behavior="focus", **kwargs)
        self.recalled: str | None = None  # the prompt the history put here (Up and Down go on while it is unchanged)

    def show_recalled(self, text: str) -> None:
        """`text` in place of what the composer holds, as one edit (Ctrl+Z gives a draft back)."""
        self.recalled = text
        self.replace(text, (0, 0), self.document.end)
        self.move_cursor(self.document.end)

    def _recalls(self, key: str) -> bool:
        """Up on an empty composer (or on a prompt it recalled, from its first row) steps back; Down from its
        last row steps forward. Anything typed or changed makes them move the cursor again."""
        if self.text and self.text != self.recalled:
            return False
        row = self.cursor_location[0]
        if key == "up":
            return row == 0
        return key == "down" and self.recalled is not None and row == self.document.line_count - 1

    @property
    def wrapped_document(self) -> WrappedDocument:
        return self.__dict__["_wrapped_document"]

    @wrapped_document.setter
    def wrapped_document(self, value: WrappedDocument) -> None:
        if type(value) is WrappedDocument:  # the TextArea makes a new one for each document it loads
            value.__class__ = _KnownHeight
        self.__dict__["_wrapped_document"] = value

    def take(self, sent: str) -> None:
        """The app took `sent`: remove it, keeping what was typed after Enter while the app was deciding (a
        clear() here wiped those keys: typed as a reply starts, they were lost one run in two)."""
        if not self.text.startswith(sent):  # changed meanwhile beyond the sent text: keep it all, lose nothing
            return
        end = self.document.get_location_from_index(len(sent))
        self.delete((0, 0), end)

    def _complete_command(self) -> bool:
        """Tab on a partly typed /command completes its name (else Tab moves focus, as everywhere)."""
        line = completed(self.text)
        if line is None or line == self.text:
            return False
        self.replace(line, (0, 0), self.document.end)
        self.move_cursor(self.document.end)
        return True

    async def _on_key(self, event: events.Key) -> None:
        if event.key == "enter":
            event.prevent_default()
            event.stop()
            self.post_message(self.Submitted(self, self.text))
            return
        if event.key in ("up", "down") and self._recalls(event.key):
            event.prevent_default()
            event.stop()
            self.post_message(self.Recall(self, event.key == "up"))
            return
        if event.key == "tab":
            event.prevent_default()
            event.stop()
            if not self._complete_command() and len(completions(self.text)) < 2:  # several: the hint lists them
                self.screen.focus_next()
                self._moved_focus = True  # the keys queued behind Tab follow the focus (OrderedKeys)
            return
        if event.key in NEW_LINE_KEYS:
            event.prevent_default()
            event.stop()
            self.insert("\n")
            return
        await super()._on_key(event)
