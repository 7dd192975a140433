"""Changes to the conversation's messages: edit, delete, pin, the system prompt, re-send from a message.

Each change is recorded for undo first (tui/controller/undo.py), and refused, with a word, while a reply
streams (it answers the conversation as it was) or when the message acted on is no longer there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tui.context.messages import Message

if TYPE_CHECKING:
    from .controller import Controller


class Editing:
    def __init__(self, controller: "Controller") -> None:
        self.ctl = controller

    def resend_from(self, index: int, expected: Message | None = None) -> None:
        """Drop what follows the user message at or before `index`, and send the conversation again."""
        if self.ctl.client is None:
            self.ctl.notify("offline: start with --base-url URL to send", severity="warning")
            return
        if self.answering() or self._stale(index, expected):
            return
        messages = self.ctl.wb.session.messages
        while index >= 0 and messages[index].role != "user":
            index -= 1
        if index < 0:
            return
        self.ctl.history.record(f"re-send from #{index}")
        self.ctl.wb.truncate_after(index)
        self.ctl.changed()
        self.ctl.sending.start()

    def _stale(self, index: int, expected: Message | None) -> bool:
        """True (and said) when message `index` is no longer the one the user acted on."""
        messages = self.ctl.wb.session.messages
        if 0 <= index < len(messages) and (expected is None or messages[index] is expected):
            return False
        self.ctl.notify("the conversation changed meanwhile: nothing was done", severity="warning")
        return True

    def answering(self) -> bool:
        """True (and said) while a reply streams: the conversation it answers is not changed under it."""
        if self.ctl.streaming:
            self.ctl.notify("a reply is still streaming: Esc stops it first", severity="warning")
        return self.ctl.streaming

    def edit(self, index: int, text: str, expected: Message | None = None) -> None:
        if not self.answering() and not self._stale(index, expected):
            self.ctl.history.record(f"edit #{index}")
            self.ctl.wb.edit(index, text)
            self.ctl.changed()

    def delete(self, index: int, expected: Message | None = None) -> None:
        if not self.answering() and not self._stale(index, expected):
            self.ctl.history.record(f"delete #{index}")
            self.ctl.wb.delete(index)
            self.ctl.changed()

    def toggle_pin(self, index: int, expected: Message | None = None) -> None:
        if not self._stale(index, expected):
            self.ctl.history.record(f"{'unpin' if self.ctl.wb.session.messages[index].pinned else 'pin'} #{index}")
            pinned = self.ctl.wb.toggle_pin(index)
            self.ctl.notify(f"message #{index} {'pinned' if pinned else 'unpinned'}")
            self.ctl.changed()

    def system_prompt(self) -> str:
        messages = self.ctl.wb.session.messages
        return messages[0].text() if messages and messages[0].role == "system" else ""

    def set_system_prompt(self, text: str) -> None:
        self.ctl.history.record("system prompt change")
        self.ctl.wb.set_system_prompt(text)
        self.ctl.changed()
