"""Where a tapped request comes from, as its record keeps it and its view says it: the client's session identity, the
sub-agent's parent, the client's compaction, the headers as sent. Helpers of the recorder (tui/tap/recorder.py).

Everything here is the client's text: bounded, kept as data, and shown only as text."""

from __future__ import annotations

from typing import Any

from tui.context.untrusted.redaction import Redactor
from tui.sessions.model import RequestRecord

from tui.tap.conversations import Conversation, Match
from tui.tap.identity import Hints, Identity
from tui.tap.server import Exchange


def masked_again(exchange: Exchange) -> list[list[str]]:
    """The headers as recorded, with every key the request is now known to carry masked (a body's `api_key` the
    server could not know of when it kept them)."""
    redactor = Redactor(exchange.secrets)
    return [[name, redactor.text(value)] for name, value in exchange.headers]


def identity_record(identity: Identity | None, hints: Hints, match: Match, threads: dict[int, Any]) -> dict | None:
    """The record's `identity`: the client's session, its word for a sub-agent, and (on a sub-agent's first request)
    the conversation and call that started it."""
    if identity is None:
        return None
    kept: dict[str, Any] = {**identity.record(), "subagent": hints.subagent[:64], "request_kind": hints.request_kind[:64]}
    if match.conversation is None and match.sibling is not None:
        kept["note"] = (f"another conversation of the same session as conversation {match.sibling} (another system "
                        "prompt or model): nothing in the traffic says which started which")
    link = match.parent if match.conversation is None else None
    if link is not None:
        parent = threads.get(link.conversation)
        kept["parent"] = {"conversation": link.conversation, "session": parent.session.id if parent else "",
                          "request": link.request, "call_id": link.call_id, "tool": link.tool,
                          "note": link.said()[:4000]}
    return kept


def origin_notes(record: RequestRecord) -> list[str]:
    """What the view says of where the request comes from."""
    notes = []
    identity = record.identity or {}
    if identity:
        sub = f"; the client calls it a {identity['subagent']} sub-agent" if identity.get("subagent") else ""
        notes.append(f"the client's session: {identity.get('kind')} {str(identity.get('value'))[:48]} "
                     f"(from the {identity.get('source')}){sub}")
        parent = identity.get("parent")
        if isinstance(parent, dict):
            notes.append(str(parent.get("note") or ""))
        if identity.get("note"):
            notes.append(str(identity["note"]))
    if record.compaction:
        notes.append(compaction_note(record.compaction))
    return notes


def compaction_note(cut: dict) -> str:
    summary = str(cut.get("summary") or "")[:200]
    return (f"the client compacted its history: {cut.get('left', 0):,} messages of request "
            f"{cut.get('previous_request')} ({cut.get('left_tokens', 0):,} tokens) left, replaced by "
            f"{len(cut.get('summary_ids') or []):,} new message(s) ({summary!r}); the prompt went from "
            f"{cut.get('tokens_before', 0):,} to {cut.get('tokens_after', 0):,} tokens")


def title_of(conversation: Conversation, client: str, model: str) -> str:
    """A tapped conversation's session title: its number, client and model, its session and parent."""
    program = client.split(" ")[0][:40].encode("utf-8", "replace").decode("utf-8") or "client"
    title = f"tap {conversation.number}: {program} · {model or 'model'}"
    if conversation.identity is not None:
        title += f" · session {conversation.identity.value[:12]}"
    if conversation.parent is not None:
        title += f" · sub-agent of {conversation.parent.conversation}"
    return title[:1000]
