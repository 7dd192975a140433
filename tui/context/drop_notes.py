"""Where each dropped message stood in a request's document, and what it said: the pane's "✂ dropped" notes.

A ledger entry names the message by its id and by its place in the session *when the request was made*; a
session read later (replay, a tap recording) may have fewer or other messages at that place. So a note finds
its message by id, is placed before the first message still in the document that came after it, and says its
place in the chat as it is now; a message deleted since is said to be gone, never quoted from its neighbour.
"""

from __future__ import annotations

from dataclasses import dataclass

from tui.context.messages import Message
from tui.context.policy.truncation import LedgerEntry
from tui.context.request import RequestView
from tui.context.untrusted.visible import visible

EXCERPT = 70  # characters of a dropped message quoted in its note


@dataclass(frozen=True)
class DropNote:
    offset: int  # the document character the note stands before
    text: str


def place_now(entry: LedgerEntry, messages: list[Message], place: dict[str, int] | None = None) -> int | None:
    """Where a ledger entry's message stands in the session now, or None when it is gone: its place when the
    request was made, if the message is still there; else found by id (ids may repeat in a file made elsewhere:
    the place, when it holds that id, is the surer of the two)."""
    if 0 <= entry.message < len(messages) and messages[entry.message].id == entry.message_id:
        return entry.message
    if place is None:
        place = {message.id: index for index, message in enumerate(messages) if message.id}
    return place.get(entry.message_id)


def entry_name(entry: LedgerEntry, messages: list[Message], place: dict[str, int] | None = None) -> str:
    """A ledger entry's message as the chat names it now (#N), or its place then if it is gone since."""
    now = place_now(entry, messages, place)
    return f"#{now}" if now is not None else f"(then #{entry.message}, gone since)"


def drop_notes(view: RequestView, messages: list[Message]) -> list[DropNote]:
    """A note for each ledger entry of `view`, with `messages` the session's messages as they are now."""
    place = {message.id: index for index, message in enumerate(messages) if message.id}
    first_offset: dict[int, int] = {}  # document message -> where its first span starts
    for span in view.document.spans:
        if span.message is not None:
            first_offset.setdefault(span.message, span.start)
    kept = [(place.get(ident, -1), first_offset[n]) for n, ident in enumerate(view.shape.message_ids)
            if n in first_offset]
    notes: list[DropNote] = []
    for entry in view.ledger:
        now = place_now(entry, messages, place)
        order = now if now is not None else entry.message
        later = [offset for position, offset in kept if position > order]
        where = min(later) if later else len(view.document.text)
        if now is not None:
            excerpt = visible(messages[now].text()[:EXCERPT].replace("\n", " "))
            name = f"#{now}"
        else:
            excerpt, name = "(no longer in the session)", f"(then #{entry.message})"
        notes.append(DropNote(where, f"✂ {entry.role} {name} dropped ({entry.tokens} tokens, {entry.policy}: "
                                     f"{entry.reason}) — {excerpt}"))
    return notes
