"""Branches: the other continuations of a conversation, kept when an old message is edited or re-sent.

The session's `messages` are the branch shown; `session.branches` hold the others, each as the messages
that follow its fork (the id of the message it continues from, "" for the very start). Showing another
branch swaps the continuations, so nothing is ever dropped: the one put away is kept as a branch in turn.
Replay and export read `messages`: they follow the branch shown.
"""

from __future__ import annotations

from tui.sessions.model import Branch, Session
from tui.sessions.schema_types import MAX_BRANCHES


def continuation_start(session: Session, fork: str) -> int | None:
    """Where the messages after `fork` begin in the branch shown; None when `fork` is not shown."""
    if not fork:
        return 0
    found = next((i for i, message in enumerate(session.messages) if message.id == fork), None)
    return None if found is None else found + 1


class TooManyBranches(ValueError):
    """A session keeps at most MAX_BRANCHES branches: the file could not be opened again with more."""


def branch_off(session: Session, at: int, label: str) -> Branch | None:
    """Put away the messages from `at` on as a branch (None when there are none) and leave the rest shown.
    Raises TooManyBranches when the session keeps as many as its file may hold."""
    kept = session.messages[at:]
    if not kept:
        return None
    if len(session.branches) >= MAX_BRANCHES:
        raise TooManyBranches(f"this session keeps {MAX_BRANCHES:,} branches, as many as its file may hold: "
                              "delete some messages on the branch shown instead")
    fork = session.messages[at - 1].id if at > 0 else ""
    branch = Branch(fork, tuple(kept), label)
    session.branches.append(branch)
    del session.messages[at:]
    return branch


def show(session: Session, branch: Branch, label: str) -> Branch | None:
    """Show `branch` in place of the continuation after its fork; that continuation is kept as a branch
    (labelled `label`) and returned, to show it again. Raises ValueError when the fork is not shown."""
    start = continuation_start(session, branch.fork)
    found = _kept(session, branch)
    if start is None or found is None:
        raise ValueError("that branch does not continue the conversation shown")
    current = session.messages[start:]
    branch = session.branches.pop(found)
    session.messages[start:] = list(branch.messages)
    if not current:
        return None
    put_away = Branch(branch.fork, tuple(current), label)
    session.branches.append(put_away)
    return put_away


def _kept(session: Session, branch: Branch) -> int | None:
    """Where `branch` is among the session's branches: the same fork, and its messages first (its label may
    differ; turns sent while it was shown were added after them)."""
    ids = [m.id for m in branch.messages]
    found = [i for i, b in enumerate(session.branches)
             if b.fork == branch.fork and [m.id for m in b.messages[:len(ids)]] == ids]
    exact = [i for i in found if len(session.branches[i].messages) == len(ids)]
    return next(iter(exact or found), None)


def branches_shown_from(session: Session) -> list[tuple[int, Branch]]:
    """Each branch that forks from the conversation shown, with the place (#N) its first message would have."""
    found = []
    for branch in session.branches:
        start = continuation_start(session, branch.fork)
        if start is not None:
            found.append((start, branch))
    return sorted(found, key=lambda item: item[0])


def repoint(session: Session, old: str, new: str) -> list[str]:
    """Branches forking at message `old` fork at `new` instead (`old` is deleted: they stay reachable); the
    first message id of each, to find them again."""
    moved = []
    for index, branch in enumerate(session.branches):
        if branch.fork == old and branch.messages:
            session.branches[index] = Branch(new, branch.messages, branch.label, branch.created)
            moved.append(branch.messages[0].id)
    return moved


def repoint_back(session: Session, firsts: list[str], old: str, new: str) -> None:
    """Undo `repoint`: the branches that start with `firsts` and fork at `old` fork at `new` again."""
    for index, branch in enumerate(session.branches):
        if branch.fork == old and branch.messages and branch.messages[0].id in firsts:
            session.branches[index] = Branch(new, branch.messages, branch.label, branch.created)


def all_message_ids(session: Session) -> set[str]:
    """The ids of every message the session keeps, on any branch."""
    return {m.id for m in session.messages} | {m.id for b in session.branches for m in b.messages}


def kept_branches_notice(session: Session) -> str:
    """What opening a session with branches says once: how many fork from the conversation shown."""
    count = len(branches_shown_from(session))
    deeper = len(session.branches) - count
    said = f"{count} other branch{'es' if count != 1 else ''} of this conversation kept: palette → Show branch"
    return said + (f" ({deeper} more continue those branches)" if deeper else "")


def fork_notes(session: Session) -> dict[str, str]:
    """By message id: the note its header shows when other versions of what follows are kept (the message where
    the shown continuation starts, or the fork itself when nothing is shown after it)."""
    counts: dict[str, tuple[int, int]] = {}
    for start, _branch in branches_shown_from(session):
        if start < len(session.messages):
            ident = session.messages[start].id
        elif start > 0:
            ident = session.messages[start - 1].id
        else:
            continue
        count, _place = counts.get(ident, (0, start))
        counts[ident] = (count + 1, start)
    return {ident: f"{count} other version{'s' if count > 1 else ''} kept (palette: Show branch at #{place})"
            for ident, (count, place) in counts.items()}
