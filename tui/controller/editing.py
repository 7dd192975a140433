"""Changes to the conversation's messages: edit, delete, pin, the system prompt, re-send from a message.

Each change is an operation in the history (history.py), and is refused, with a word, while a reply streams
(it answers the conversation as it was) or when the message acted on is no longer there. Editing a message
that has others after it, or re-sending from one, makes a branch: the old continuation is kept (branches.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dataclasses import replace

from tui.context.messages import Message

from tui.controller.branches import TooManyBranches, branch_off, branches_shown_from, repoint, show
from tui.controller.history import Operation, OpKind
from tui.controller.events import Severity

if TYPE_CHECKING:
    from tui.controller.controller import Controller


class Editing:
    def __init__(self, controller: "Controller") -> None:
        self.ctl = controller

    def resend_from(self, index: int, expected: Message | None = None) -> None:
        """Drop what follows the user message at or before `index`, and send the conversation again."""
        if self.ctl.client is None:
            self.ctl.notify("offline: start with --base-url URL to send", severity=Severity.WARNING)
            return
        if self.answering() or self._stale(index, expected):
            return
        if self.rewind_to(index):
            self.ctl.sending.start()

    def rewind_to(self, index: int) -> bool:
        """Put away what follows the user message at or before `index` as a branch (the re-send's first half)."""
        session = self.ctl.wb.session
        messages = session.messages
        while 0 <= index < len(messages) and messages[index].role != "user":
            index -= 1
        if not 0 <= index < len(messages):
            return False
        label = f"re-send from #{index}"
        try:
            kept = branch_off(session, index + 1, f"before {label}")  # what followed stays, as a branch
        except TooManyBranches as exc:
            self.ctl.notify(str(exc), severity=Severity.ERROR)
            return False
        self.ctl.history.add(Operation(OpKind.BRANCH, label, other=kept, anchor=messages[index].id))
        self.ctl.changed()
        return True

    def _stale(self, index: int, expected: Message | None) -> bool:
        """True (and said) when message `index` is no longer the one the user acted on."""
        messages = self.ctl.wb.session.messages
        if 0 <= index < len(messages) and (expected is None or messages[index] is expected):
            return False
        self.ctl.notify("the conversation changed meanwhile: nothing was done", severity=Severity.WARNING)
        return True

    def answering(self) -> bool:
        """True (and said) while a reply streams: the conversation it answers is not changed under it."""
        if self.ctl.streaming:
            self.ctl.notify("a reply is still streaming: Esc stops it first", severity=Severity.WARNING)
        return self.ctl.streaming

    def edit(self, index: int, text: str, expected: Message | None = None) -> None:
        """The last message is edited in place; an earlier one on a new branch, the old continuation kept."""
        if self.answering() or self._stale(index, expected):
            return
        session, label = self.ctl.wb.session, f"edit #{index}"
        old = session.messages[index]
        if index == len(session.messages) - 1:
            self.ctl.wb.edit(index, text)
            self.ctl.history.add(Operation(OpKind.EDIT, label, message=session.messages[index], before=old))
        else:
            try:
                kept = branch_off(session, index, f"before {label}")
            except TooManyBranches as exc:
                self.ctl.notify(str(exc), severity=Severity.ERROR)
                return
            session.messages.append(replace(old, content=text, id=self.ctl.wb.new_id(), incomplete=False))
            self.ctl.history.add(Operation(OpKind.BRANCH, label, other=kept, anchor=kept.fork if kept else ""))
            self.ctl.notify(f"edited #{index} on a new branch: the old continuation is kept (palette: Show branch)")
        self.ctl.changed()

    def delete(self, index: int, expected: Message | None = None) -> None:
        if not self.answering() and not self._stale(index, expected):
            messages = self.ctl.wb.session.messages
            message, anchor = messages[index], messages[index - 1].id if index > 0 else ""
            self.ctl.wb.delete(index)
            moved = repoint(self.ctl.wb.session, message.id, anchor)  # branches from it stay reachable
            self.ctl.history.add(Operation(OpKind.DELETE, f"delete #{index}", message=message, place=index,
                                           anchor=anchor, moved=moved))
            self.ctl.changed()

    def toggle_pin(self, index: int, expected: Message | None = None) -> None:
        if not self._stale(index, expected):
            old = self.ctl.wb.session.messages[index]
            pinned = self.ctl.wb.toggle_pin(index)
            self.ctl.history.add(Operation(OpKind.PIN, f"{'pin' if pinned else 'unpin'} #{index}",
                                           message=self.ctl.wb.session.messages[index], before=old))
            self.ctl.notify(f"message #{index} {'pinned' if pinned else 'unpinned'}")
            self.ctl.changed()

    def system_prompt(self) -> str:
        messages = self.ctl.wb.session.messages
        return messages[0].text() if messages and messages[0].role == "system" else ""

    def set_system_prompt(self, text: str) -> None:
        """Changed in place (it is not a turn: no branch), or added first."""
        messages = self.ctl.wb.session.messages
        had = messages[0] if messages and messages[0].role == "system" else None
        self.ctl.wb.set_system_prompt(text)
        now = messages[0]
        if had is not None:
            self.ctl.history.add(Operation(OpKind.EDIT, "system prompt change", message=now, before=had,
                                           anywhere=True))
        else:
            self.ctl.history.add(Operation(OpKind.INSERT, "system prompt added", message=now, place=0))
        self.ctl.changed()

    def inserted(self, message: Message, label: str) -> None:
        """A message added at the end by an attach: an operation, to take back."""
        messages = self.ctl.wb.session.messages
        place = next((i for i, m in enumerate(messages) if m.id == message.id), len(messages) - 1)
        anchor = messages[place - 1].id if place > 0 else ""
        self.ctl.history.add(Operation(OpKind.INSERT, label, message=message, place=place, anchor=anchor))

    def show_branch(self, index: int) -> None:
        """Show the index-th branch forking from the conversation shown; the continuation shown now is kept as a
        branch. Undo shows it back."""
        ctl = self.ctl
        found = branches_shown_from(ctl.wb.session)
        if ctl.read_only:
            ctl.notify("read-only session: the branch shown stays", severity=Severity.WARNING)
            return
        if self.answering() or not 0 <= index < len(found):
            return
        place, branch = found[index]
        label = f"show branch at #{place}"
        kept = show(ctl.wb.session, branch, f"before {label}")
        ctl.history.add(Operation(OpKind.BRANCH, label, other=kept, anchor=branch.fork))
        ctl.notify(f"showing the branch at #{place} ({len(branch.messages)} messages); "
                   f"{len(ctl.wb.session.branches)} kept besides")
        ctl.changed()
