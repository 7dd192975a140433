"""What a tapped request's body is: its wire format, the keys it carries, the body the app shows, and the checks a
session file's body must pass. Pure helpers of the recorder (tui/tap/recorder.py); they keep no state."""

from __future__ import annotations

import json
from typing import Any

from tui.context.formats import FormatKind, Parsed, kind_of_path, parse_body
from tui.context.untrusted.redaction import Redactor, credential_name, key_shaped
from tui.sessions.model import RequestRecord
from tui.sessions.redacted import BODY_WORDS, outside_words

from tui.tap.client_cuts import messages_of
from tui.tap.server import Exchange


def body_keys(body: dict) -> list[str]:
    """The values of a body's credential fields (api_key, metadata.session_token, …) outside its messages:
    forwarded, never kept or shown (redacted.py masks them by name; these are looked for in replies)."""
    found: list[str] = []

    def walk(value: Any, credential: bool = False) -> None:
        if isinstance(value, dict):
            for name, item in value.items():
                walk(item, credential or isinstance(name, str) and credential_name(name))
        elif isinstance(value, list):
            for item in value:
                walk(item, credential)
        elif isinstance(value, str) and (credential or key_shaped(value)):
            found.append(value)
    walk({name: value for name, value in body.items() if name not in BODY_WORDS})
    return found


def shown_body(body: dict) -> dict:
    """The body as the app shows it: each credential field's value as ***, the messages as they are."""
    return Redactor().value(body, outside_words, by_name=True)


def chat_body(exchange: Exchange) -> dict | None:
    found = wire_body(exchange)
    return found[1] if found is not None and found[0] is FormatKind.CHAT else None


def wire_body(exchange: Exchange) -> tuple[FormatKind, dict] | None:
    """The request's format and body, when it is a chat completion, a Messages or a Responses request."""
    kind = kind_of_path(exchange.path)
    if exchange.method != "POST" or kind is None:
        return None
    try:
        body = json.loads(exchange.body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(body, dict):
        return None
    if kind is FormatKind.CHAT and (not isinstance(body.get("messages"), list) or not body["messages"]):
        return None
    return kind, body


def check_bytes(raw: bytes) -> None:
    """ValueError (one line) when a session file could not read these body bytes back: the tap keeps a body as it
    was sent, so one its reader refuses (a key twice, a byte order mark, an integer past 2**63) is not recorded."""
    from tui.sessions.session_log import body_text_problem

    problem = body_text_problem(raw)
    if problem:
        raise ValueError(f"the body {problem[:200]}: a session file could not read it back (forwarded unchanged)")


def check_body(body: dict, kind: FormatKind = FormatKind.CHAT) -> Parsed:
    """The checks a session file's request body must pass (tui/sessions/schema.py), and its messages'; the
    body as the server reads it."""
    from tui.sessions.schema import Body, check_tools, check_wire_body, conform

    if kind is FormatKind.CHAT:
        conform(body, Body, ".body")
        check_tools(body.get("tools"), ".body.tools")
    parsed = parse_body(kind, body)  # one line when it is not a body of its format
    if kind is not FormatKind.CHAT:
        check_wire_body(kind.value, body, ".body")
    messages_of(parsed.messages, [f"m{i}" for i in range(len(parsed.messages))])
    return parsed


def max_tokens_of(record: RequestRecord) -> int:
    key = "max_output_tokens" if record.format == FormatKind.RESPONSES.value else "max_tokens"
    value = record.body.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
