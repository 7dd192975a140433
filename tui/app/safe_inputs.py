"""Editors that show what they hold without letting a control character reach the terminal, and that take a
burst of keys in the order it was typed."""

from __future__ import annotations

from textual import events
from textual.widgets import Input, TextArea

from .shown import VisibleLines


class OrderedKeys:
    """Run the editor's own key bindings (End, Backspace, Delete, arrows…) as its key arrives, in its own queue.

    Textual runs a widget's bindings when the key reaches the App, after the widget's own queue has gone on:
    printable keys behind it in a burst (a fast typist, tmux send-keys, a paste of keys) were inserted first,
    and the binding then acted on a state it was not meant for. `End BSpace 1 2` on "12345" gave "1", not
    "123412"; `5 BSpace 6` lost the 6. Found with a plain Textual Input: not ctxpane's drawing."""

    async def _on_key(self, event: events.Key) -> None:
        action = self._own_action(event.key)
        # An action that skips (Ctrl+C with nothing selected) leaves the key to the App (Ctrl+C: how to quit).
        if action is not None and await self.app.run_action(action, self):  # type: ignore[attr-defined]
            event.prevent_default()
            event.stop()
            return
        await super()._on_key(event)  # type: ignore[misc]

    def _own_action(self, key: str) -> str | None:
        for binding in self._bindings.key_to_bindings.get(key, []):  # type: ignore[attr-defined]
            name = binding.action.split("(", 1)[0]
            if hasattr(self, f"action_{name}") and self.check_action(name, ()) is not False:  # type: ignore
                return binding.action
        return None


class SafeTextArea(OrderedKeys, VisibleLines, TextArea):
    """A TextArea for text from outside (a pasted file, a message being edited)."""


class SafeInput(OrderedKeys, VisibleLines, Input):
    """An Input for text from outside (a label, a title, a search)."""
