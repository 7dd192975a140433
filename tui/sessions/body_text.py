"""A request body's text as the session file's writer takes it (tui/sessions/log_writer.py): the exact text as
sent, unless a key must come out of it; the app's own bodies made from the previous body's text for the messages
the two share; and a wire message's key whatever the client's spacing, escapes or key order."""

from __future__ import annotations

import json
from typing import Any

from tui.context.request_bytes import request_text
from tui.sessions.body_split import Split
from tui.sessions.model import RequestRecord
from tui.sessions.log_state import Json


def canonical(text: str) -> tuple[str, bool]:
    """A wire message's key whatever the client's spacing, escapes or key order (what a session message is looked
    up by), and whether `text` is what the app itself writes (request_text)."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return text, False
    return wire_key(value), request_text(value) == text


def wire_key(value: Json) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def exact_text(record: RequestRecord, redactor: Any, previous: dict[str, Json] | None,
               cut: Split | None) -> str:
    """The body's exact text, as sent, unless a secret must come out of it (then the redacted body, re-written).

    The app's own bodies are the bytes request_text makes; the previous body's cut spares writing again the
    messages the two share (request_text writes a list's items as it writes each alone)."""
    from tui.sessions.redacted import BODY_WORDS, outside_words

    body = record.body
    shown = redactor.value(body, outside_words, by_name=True)
    changed = any(shown.get(k) != v for k, v in body.items() if k not in BODY_WORDS) if isinstance(shown, dict) \
        else True
    if changed:
        return request_text(shown)
    text = record.exact_text()
    if text is not None:
        return text
    return following_text(body, previous, cut) or request_text(body)


_SENTINEL = "\u0000ctxpane: the messages\u0000"


def following_text(body: dict[str, Json], previous: dict[str, Json] | None, cut: Split | None) -> str | None:
    """request_text(body), made from the previous body's text for the messages it shares; None if it cannot be."""
    if previous is None or cut is None:
        return None
    messages, before = body.get("messages"), previous.get("messages")
    hole = next((h for h in cut.holes if h.key == "messages" and h.items is not None), None)
    if not isinstance(messages, list) or not isinstance(before, list) or hole is None or hole.items is None \
            or len(hole.items) != len(before) or (hole.lead, hole.sep, hole.trail) != ("", ",", ""):
        return None
    shared = len(before) if messages[:len(before)] == before else 0
    if not shared:
        return None
    frame = request_text({**body, "messages": [_SENTINEL]})
    marker = request_text([_SENTINEL])[1:-1]
    if frame.count(marker) != 1:
        return None
    items = list(hole.items[:shared]) + [request_text(item) for item in messages[shared:]]
    return frame.replace(marker, ",".join(items))
