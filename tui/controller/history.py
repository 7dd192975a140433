"""The history of changes to a session: each one an operation that can be taken back and done again.

An operation says what it changed, by message id, and undoes only that: putting a deleted message back,
an edit's old text, the branch shown before an edit or a re-send. So an undo never removes what was done
since (before, a snapshot of all the messages was restored, and the turns sent after it were lost).
Editing or re-sending an old message makes a branch (branches.py): the old continuation is kept, and
undo shows it again while keeping the new one as a branch. Redo does the operation taken back again; a new
change clears what could be redone. Sends and replies only add messages at the end: they are not taken
back by undo (delete a turn for that), and they leave what could be redone as it is.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import TYPE_CHECKING, Any, Callable

from tui.context.messages import Message
from tui.sessions.model import Branch, Session

from tui.controller.branches import branch_off, continuation_start, repoint, repoint_back, show
from tui.controller.events import Severity

if TYPE_CHECKING:
    from tui.controller.parts import Parts
    from tui.controller.workbench import Workbench

DEPTH = 200  # operations kept; the oldest goes first
# Said when Undo finds nothing in a session read from its file. The history is not written with the session: an
# operation holds live objects (a loaded tokenizer, a template a server sent) that a file cannot hold faithfully.
NOT_KEPT = ("nothing to undo: undo history is not kept with the session file (changes made before it was opened "
            "cannot be undone; the branches an edit or a re-send kept are, in the palette)")


class OpKind(Enum):
    DELETE = "delete"
    EDIT = "edit"
    PIN = "pin"
    INSERT = "insert"  # an attached document or image, a system prompt added
    BRANCH = "branch"  # an edit or a re-send of an old message, a branch shown
    FIELD = "field"  # the policy (a summary, a switch), fences, params: session settings
    TEMPLATE = "template"  # the template the session is rendered with
    TOKENIZER = "tokenizer"  # the tokenizer it is counted with


@dataclass
class Operation:
    kind: OpKind
    label: str  # as the palette and the notices say it ("delete #3")
    message: Message | None = None  # DELETE / INSERT: the message; EDIT / PIN: the message after the change
    before: Any = None  # EDIT / PIN: the message before; FIELD: the value before
    after: Any = None  # FIELD: {attribute: value} after; TEMPLATE / TOKENIZER: what is used after
    place: int = 0  # DELETE / INSERT: where it stood in the branch shown
    anchor: str = ""  # DELETE / INSERT: the id of the message before it ("" when first); BRANCH: the fork
    other: Branch | None = None  # BRANCH: the branch to show to undo (then to redo) it
    moved: list[str] = field(default_factory=list)  # DELETE: branches that forked at the message (first ids)
    anywhere: bool = False  # EDIT: the system prompt, changed in place wherever it stands

    @property
    def subject(self) -> Message:
        """The message a DELETE, INSERT, EDIT or PIN is about (each is recorded with one)."""
        if self.message is None:
            raise ValueError(f"{self.label} names no message")
        return self.message

    def undo(self, wb: Workbench) -> None:
        _DO[self.kind][0](self, wb)

    def redo(self, wb: Workbench) -> None:
        _DO[self.kind][1](self, wb)


Step = Callable[[Operation, "Workbench"], None]  # one way (undo or redo) of an operation, done on the workbench


# -- what each kind does and undoes (on the workbench: its session, template and tokenizer) -----------------
def _remove(op: Operation, wb: Workbench) -> None:
    _remove_id(wb.session, op.subject.id)


def _delete_again(op: Operation, wb: Workbench) -> None:
    _remove_id(wb.session, op.subject.id)
    op.moved = repoint(wb.session, op.subject.id, op.anchor)


def _undelete(op: Operation, wb: Workbench) -> None:
    _put_back(op, wb)
    repoint_back(wb.session, op.moved, op.anchor, op.subject.id)


def _put_back(op: Operation, wb: Workbench) -> None:
    """Back after the message it followed, wherever that is now (shown, or on a branch put away since)."""
    session, message = wb.session, op.subject
    if _insert_after(session.messages, op.anchor, message, op.place):
        return
    for index, branch in enumerate(session.branches):
        messages = list(branch.messages)
        if op.anchor and _insert_after(messages, op.anchor, message, None):
            session.branches[index] = replace(branch, messages=tuple(messages))
            return
        if op.anchor and branch.fork == op.anchor:
            session.branches[index] = replace(branch, messages=(message, *branch.messages))
            return
    session.messages.insert(min(op.place, len(session.messages)), message)


def _insert_after(messages: list[Message], anchor: str, message: Message, place: int | None) -> bool:
    if not anchor:
        if place is None:
            return False
        messages.insert(0, message)
        return True
    found = next((i for i, m in enumerate(messages) if m.id == anchor), None)
    if found is None:
        return False
    messages.insert(found + 1, message)
    return True


def _old_message(op: Operation, wb: Workbench) -> None:
    _still_last(op, wb.session)
    _swap_id(wb.session, op.before)


def _new_message(op: Operation, wb: Workbench) -> None:
    _still_last(op, wb.session)
    _swap_id(wb.session, op.subject)


def _still_last(op: Operation, session: Session) -> None:
    """An edit in place is taken back only while nothing answers the message: under a reply to the edited text
    the old text would be a rewrite of the conversation (edit it again: that makes a branch)."""
    if op.kind is OpKind.EDIT and not op.anywhere and session.messages and \
            session.messages[-1].id != op.subject.id:
        raise ValueError("messages came after it (edit it again: that keeps this version on a branch)")


def _show_other(op: Operation, wb: Workbench) -> None:
    """Show the branch kept, keeping what was shown as the branch to show when this is done again (with
    nothing shown after the fork, doing it again puts the continuation away once more)."""
    session = wb.session
    if op.other is not None:
        op.other = show(session, op.other, op.label)
        return
    start = continuation_start(session, op.anchor)
    if start is None:
        raise ValueError("the message that branch continues from is not shown")
    op.other = branch_off(session, start, op.label)


def _fields_before(op: Operation, wb: Workbench) -> None:
    for name, value in op.before.items():
        setattr(wb.session, name, copy.deepcopy(value))


def _fields_after(op: Operation, wb: Workbench) -> None:
    for name, value in op.after.items():
        setattr(wb.session, name, copy.deepcopy(value))


_DO: dict[OpKind, tuple[Step, Step]] = {OpKind.DELETE: (_undelete, _delete_again), OpKind.INSERT: (_remove, _put_back),
       OpKind.EDIT: (_old_message, _new_message), OpKind.PIN: (_old_message, _new_message),
       OpKind.BRANCH: (_show_other, _show_other), OpKind.FIELD: (_fields_before, _fields_after),
       OpKind.TEMPLATE: (lambda op, wb: wb.set_template(op.before), lambda op, wb: wb.set_template(op.after)),
       OpKind.TOKENIZER: (lambda op, wb: wb.set_tokenizer(*op.before), lambda op, wb: wb.set_tokenizer(*op.after))}


def _remove_id(session: Session, ident: str) -> None:
    session.messages[:] = [m for m in session.messages if m.id != ident]
    session.branches[:] = [replace(b, messages=tuple(m for m in b.messages if m.id != ident))
                           for b in session.branches]
    session.branches[:] = [b for b in session.branches if b.messages]


def _swap_id(session: Session, message: Message) -> None:
    """Put `message` in place of the message of its id, shown or on a branch."""
    session.messages[:] = [message if m.id == message.id else m for m in session.messages]
    session.branches[:] = [replace(b, messages=tuple(message if m.id == message.id else m for m in b.messages))
                           for b in session.branches]


# -- the history ----------------------------------------------------------------------------------------
@dataclass
class History:
    parts: "Parts"
    done: list[Operation] = field(default_factory=list)
    undone: list[Operation] = field(default_factory=list)
    from_file: bool = False  # the session was read from its file: what was done before then cannot be undone

    @property
    def next_label(self) -> str | None:
        """What Undo would take back now (None: nothing)."""
        return self.done[-1].label if self.done else None

    @property
    def redo_label(self) -> str | None:
        return self.undone[-1].label if self.undone else None

    def add(self, op: Operation) -> None:
        """An operation just done: it can be undone; what could be redone cannot any more."""
        self.done.append(op)
        del self.done[:-DEPTH]
        self.undone.clear()

    def forget(self, from_file: bool = False) -> None:
        """Another session is open: its changes are not this one's to undo. `from_file`: it was read from its file
        (its earlier changes are not known: Undo says so)."""
        self.done.clear()
        self.undone.clear()
        self.from_file = from_file

    def undo(self) -> bool:
        """Take back the last operation. False (and said) when there is none or a reply is arriving."""
        return self._step(self.done, self.undone, "undo", "undone", Operation.undo)

    def redo(self) -> bool:
        return self._step(self.undone, self.done, "redo", "redone", Operation.redo)

    def _step(self, source: list[Operation], target: list[Operation], verb: str, past: str, run: Step) -> bool:
        """Run the last operation of `source` one way (undo or redo) and move it to `target`."""
        if not self._may(verb):
            return False
        if not source:
            self.parts.notify(NOT_KEPT if verb == "undo" and self.from_file else f"nothing to {verb}")
            return False
        op = source[-1]
        try:
            run(op, self.parts.wb)
        except ValueError as exc:  # (a branch whose fork is gone): said, and kept to try again
            self.parts.notify(f"cannot {verb} {op.label}: {exc}", severity=Severity.WARNING)
            return False
        target.append(source.pop())
        self.parts.notify(f"{past}: {op.label}")
        self.parts.changed()
        return True

    def _may(self, what: str) -> bool:
        if self.parts.read_only:
            self.parts.notify(f"read-only session: nothing to {what}", severity=Severity.WARNING)
            return False
        if self.parts.streaming:
            self.parts.notify(f"a reply is arriving: stop it (Esc) before you {what}", severity=Severity.WARNING)
            return False
        return True

    # -- recording, around a change ------------------------------------------------------------------
    def settings_before(self, *names: str) -> dict[str, Any]:
        """The session settings `names` as they are, to pass to `settings_changed` after the change."""
        return {name: copy.deepcopy(getattr(self.parts.wb.session, name)) for name in names}

    def settings_changed(self, label: str, before: dict[str, Any]) -> None:
        """Session settings changed since `settings_before` (the policy, fences, params): one operation."""
        after = {name: copy.deepcopy(getattr(self.parts.wb.session, name)) for name in before}
        if after != before:
            self.add(Operation(OpKind.FIELD, label, before=before, after=after))
