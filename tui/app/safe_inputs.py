"""Editors that show what they hold without letting a control character reach the terminal."""

from __future__ import annotations

from textual.widgets import Input, TextArea

from .shown import VisibleLines


class SafeTextArea(VisibleLines, TextArea):
    """A TextArea for text from outside (a pasted file, a message being edited)."""


class SafeInput(VisibleLines, Input):
    """An Input for text from outside (a label, a title, a search)."""
