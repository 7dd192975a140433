"""Changes to the conversation's messages: edit, delete, pin, the system prompt, re-send from a message.

Each change is an operation in the history (history.py), and is refused, with a word, while a reply streams
(it answers the conversation as it was) or when the message acted on is no longer there. Editing a message
that has others after it, or re-sending from one, makes a branch: the old continuation is kept (branches.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from dataclasses import replace

from tui.context.messages import Message

from tui.controller.branches import TooManyBranches, branch_off, branches_shown_from, repoint, show
from tui.controller.history import Operation, OpKind
from tui.controller.events import Severity

if TYPE_CHECKING:
    from tui.controller.parts import Parts


class Editing:
    def __init__(self, parts: "Parts", send: Callable[[], None]) -> None:
        self.parts, self.send = parts, send  # send: the conversation as it stands, to the server

    def resend_from(self, index: int, expected: Message | None = None) -> None:
        """Drop what follows the user message at or before `index`, and send the conversation again."""
        if self.parts.client is None:
            self.parts.notify("offline: start with --base-url URL to send", severity=Severity.WARNING)
            return
        if self.answering() or self._stale(index, expected):
            return
        if self.rewind_to(index):
            self.send()

    def rewind_to(self, index: int) -> bool:
        """Put away what follows the user message at or before `index` as a branch (the re-send's first half)."""
        session = self.parts.wb.session
        messages = session.messages
        while 0 <= index < len(messages) and messages[index].role != "user":
            index -= 1
        if not 0 <= index < len(messages):
            return False
        label = f"re-send from #{index}"
        try:
            kept = branch_off(session, index + 1, f"before {label}")  # what followed stays, as a branch
        except TooManyBranches as exc:
            self.parts.notify(str(exc), severity=Severity.ERROR)
            return False
        self.parts.history.add(Operation(OpKind.BRANCH, label, other=kept, anchor=messages[index].id))
        self.parts.changed()
        return True

    def _stale(self, index: int, expected: Message | None) -> bool:
        """True (and said) when message `index` is no longer the one the user acted on."""
        messages = self.parts.wb.session.messages
        if 0 <= index < len(messages) and (expected is None or messages[index] is expected):
            return False
        self.parts.notify("the conversation changed meanwhile: nothing was done", severity=Severity.WARNING)
        return True

    def answering(self) -> bool:
        """True (and said) while a reply streams: the conversation it answers is not changed under it."""
        if self.parts.streaming:
            self.parts.notify("a reply is still streaming: Esc stops it first", severity=Severity.WARNING)
        return self.parts.streaming

    def edit(self, index: int, text: str, expected: Message | None = None) -> None:
        """The last message is edited in place; an earlier one on a new branch, the old continuation kept."""
        if self.answering() or self._stale(index, expected):
            return
        session, label = self.parts.wb.session, f"edit #{index}"
        old = session.messages[index]
        if index == len(session.messages) - 1:
            self.parts.wb.edit(index, text)
            self.parts.history.add(Operation(OpKind.EDIT, label, message=session.messages[index], before=old))
        else:
            try:
                kept = branch_off(session, index, f"before {label}")
            except TooManyBranches as exc:
                self.parts.notify(str(exc), severity=Severity.ERROR)
                return
            session.messages.append(replace(old, content=text, id=self.parts.wb.new_id(), incomplete=False))
            self.parts.history.add(Operation(OpKind.BRANCH, label, other=kept, anchor=kept.fork if kept else ""))
            self.parts.notify(f"edited #{index} on a new branch: the old continuation is kept (palette: Show branch)")
        self.parts.changed()

    def delete(self, index: int, expected: Message | None = None) -> None:
        if not self.answering() and not self._stale(index, expected):
            messages = self.parts.wb.session.messages
            message, anchor = messages[index], messages[index - 1].id if index > 0 else ""
            self.parts.wb.delete(index)
            moved = repoint(self.parts.wb.session, message.id, anchor)  # branches from it stay reachable
            self.parts.history.add(Operation(OpKind.DELETE, f"delete #{index}", message=message, place=index,
                                           anchor=anchor, moved=moved))
            self.parts.changed()

    def toggle_pin(self, index: int, expected: Message | None = None) -> None:
        if not self._stale(index, expected):
            old = self.parts.wb.session.messages[index]
            pinned = self.parts.wb.toggle_pin(index)
            self.parts.history.add(Operation(OpKind.PIN, f"{'pin' if pinned else 'unpin'} #{index}",
                                           message=self.parts.wb.session.messages[index], before=old))
            self.parts.notify(f"message #{index} {'pinned' if pinned else 'unpinned'}")
            self.parts.changed()

    def system_prompt(self) -> str:
        messages = self.parts.wb.session.messages
        return messages[0].text() if messages and messages[0].role == "system" else ""

    def set_system_prompt(self, text: str) -> None:
        """Changed in place (it is not a turn: no branch), or added first."""
        messages = self.parts.wb.session.messages
        had = messages[0] if messages and messages[0].role == "system" else None
        self.parts.wb.set_system_prompt(text)
        now = messages[0]
        if had is not None:
            self.parts.history.add(Operation(OpKind.EDIT, "system prompt change", message=now, before=had,
                                           anywhere=True))
        else:
            self.parts.history.add(Operation(OpKind.INSERT, "system prompt added", message=now, place=0))
        self.parts.changed()

    def inserted(self, message: Message, label: str) -> None:
        """A message added at the end by an attach: an operation, to take back."""
        messages = self.parts.wb.session.messages
        place = next((i for i, m in enumerate(messages) if m.id == message.id), len(messages) - 1)
        anchor = messages[place - 1].id if place > 0 else ""
        self.parts.history.add(Operation(OpKind.INSERT, label, message=message, place=place, anchor=anchor))

    def show_branch(self, index: int) -> None:
        """Show the index-th branch forking from the conversation shown; the continuation shown now is kept as a
        branch. Undo shows it back."""
        parts = self.parts
        found = branches_shown_from(parts.wb.session)
        if parts.read_only:
            parts.notify("read-only session: the branch shown stays", severity=Severity.WARNING)
            return
        if self.answering() or not 0 <= index < len(found):
            return
        place, branch = found[index]
        label = f"show branch at #{place}"
        kept = show(parts.wb.session, branch, f"before {label}")
        parts.history.add(Operation(OpKind.BRANCH, label, other=kept, anchor=branch.fork))
        parts.notify(f"showing the branch at #{place} ({len(branch.messages)} messages); "
                   f"{len(parts.wb.session.branches)} kept besides")
        parts.changed()
