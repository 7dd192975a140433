"""The app's one way onto the clipboard: every copy is made safe to paste, whichever widget asks.

Textual's editors copy their selection with `App.copy_to_clipboard` (Ctrl+C in a TextArea); a selection of a
model's reply or of the Request tab would reach the clipboard with its escape sequences as they are. Both Apps
mix this in, so that path too goes through `paste_safe`; only `copy_exact` (after the user confirmed) does not.
"""

from __future__ import annotations

from textual.app import App

from tui.context.untrusted.visible import paste_safe


class SafeClipboard(App):
    def copy_to_clipboard(self, text: str) -> None:
        super().copy_to_clipboard(paste_safe(text)[0])

    def copy_exact(self, text: str) -> None:
        """The bytes as they are: only for a copy the user asked for by name, after a warning."""
        super().copy_to_clipboard(text)
