"""Undo: every change that removes or replaces messages can be taken back, several steps deep.

Before such a change the controller records what the session held: its list of messages (messages
are replaced, never changed in place, so a shallow copy keeps the old ones intact) and its policy
(a summary replaces turns through it). Undo puts them back and saves the file as after any change.
The id counter is never rolled back, so an id given after a deletion is never given again after
its undo: ids stay unique in the file.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tui.context.messages import Message

if TYPE_CHECKING:
    from .controller import Controller

DEPTH = 50  # steps kept; the oldest goes first


@dataclass(frozen=True)
class Step:
    label: str  # what the step undoes, as the palette and the notice say it ("delete #3")
    messages: tuple[Message, ...] | None  # None: the step changed only the policy (a summary made while sending)
    policy: dict


class History:
    def __init__(self, controller: "Controller") -> None:
        self.ctl = controller
        self.steps: list[Step] = []

    @property
    def next_label(self) -> str | None:
        """What Undo would take back now (None: nothing)."""
        return self.steps[-1].label if self.steps else None

    def record(self, label: str, policy_only: bool = False) -> None:
        """Call before a change that removes or replaces messages (`policy_only`: through the policy only, so
        undoing it keeps the messages sent and received since)."""
        session = self.ctl.wb.session
        messages = None if policy_only else tuple(session.messages)
        self.steps.append(Step(label, messages, copy.deepcopy(session.policy)))
        del self.steps[:-DEPTH]

    def forget(self) -> None:
        """Another session is open: its changes are not this one's to undo."""
        self.steps.clear()

    def undo(self) -> bool:
        """Take back the last recorded change. False (and said) when there is none or a reply is arriving."""
        if self.ctl.read_only:
            self.ctl.notify("read-only session: nothing to undo", severity="warning")
            return False
        if self.ctl.streaming:
            self.ctl.notify("a reply is arriving: stop it (Esc) before undoing", severity="warning")
            return False
        if not self.steps:
            self.ctl.notify("nothing to undo")
            return False
        step = self.steps.pop()
        session = self.ctl.wb.session
        if step.messages is not None:
            session.messages[:] = step.messages
        session.policy = copy.deepcopy(step.policy)
        self.ctl.notify(f"undone: {step.label}")
        self.ctl.changed()
        return True
