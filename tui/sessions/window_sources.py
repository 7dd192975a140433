"""A session's request records as the windows the phrase search reads (tui/context/policy/window_search.py): each
body read back in its own wire format only when the search comes to it, newest first."""

from __future__ import annotations

from functools import partial
from typing import Callable, Sequence

from tui.context.messages import Message
from tui.context.policy.window_search import (RenderedDocument, RequestWindow, WindowSearch, current_window,
                                              reply_text, search_windows, wire_window_message)
from tui.context.request import RequestView

from tui.sessions.model import RequestRecord
from tui.sessions.replay import ledger_entries, parsed_body


def record_window(record: RequestRecord) -> RequestWindow:
    """What request `record` sent, as its body holds it; a body that cannot be read back is said, not skipped.

    A Responses request that continues an earlier response (previous_response_id) is marked: its server held that
    response's context too, which is in the earlier records, not in this body."""
    reply = reply_text(record.reply)
    try:
        parsed = parsed_body(record)
    except ValueError as exc:
        return RequestWindow(record.number, True, (), reply, unreadable=str(exc).splitlines()[0] if str(exc) else
                             "the stored body cannot be read")
    ids = record.message_ids if len(record.message_ids) == len(parsed.messages) else [""] * len(parsed.messages)
    messages = tuple(wire_window_message(m, ident) for m, ident in zip(parsed.messages, ids))
    return RequestWindow(record.number, True, messages, reply, tuple(ledger_entries(record)),
                         held_elsewhere=bool(parsed.previous_response_id))


def record_windows(records: Sequence[RequestRecord]) -> list[Callable[[], RequestWindow]]:
    """One reader per record, oldest first: nothing is read until the search calls it."""
    return [partial(record_window, record) for record in records]


def searched_session(phrase: str, records: Sequence[RequestRecord], view: RequestView | None,
                     transcript: Sequence[Message], cancelled: Callable[[], bool] = lambda: False) -> WindowSearch:
    """The phrase looked for in every request of a session (newest first) and in the request the pane shows now
    (`view`: not sent yet, numbered after the last record)."""
    current = None
    if view is not None:
        number = (records[-1].number if records else 0) + 1
        current = current_window(number, view.snapshot.wire, view.shape.message_ids, view.ledger,
                                 RenderedDocument(view.snapshot.document, view.shape.tokens))
    return search_windows(phrase, record_windows(records), current, transcript, cancelled=cancelled)
