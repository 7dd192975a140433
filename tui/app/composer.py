"""The message input: Enter sends, Alt+Enter or Ctrl+J adds a new line."""

from __future__ import annotations

from textual import events
from textual.message import Message
from .safe_inputs import SafeTextArea


class Composer(SafeTextArea):
    DEFAULT_CSS = """
    Composer { height: auto; min-height: 3; max-height: 12; border: tall $primary 50%; }
    Composer:focus { border: tall $primary; }
    """

    class Submitted(Message):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    def __init__(self, **kwargs) -> None:
        super().__init__(soft_wrap=True, show_line_numbers=False, tab_behavior="focus", **kwargs)

    async def _on_key(self, event: events.Key) -> None:
        if event.key == "enter":
            event.prevent_default()
            event.stop()
            self.post_message(self.Submitted(self.text))
            return
        if event.key in ("alt+enter", "ctrl+j", "shift+enter"):
            event.prevent_default()
            event.stop()
            self.insert("\n")
            return
        await super()._on_key(event)
