"""Who sent a request: the session identity a client puts in its headers or body, read defensively. Pure logic.

A client that says which session a request belongs to is believed over what its messages say: two sessions that
start with the same prompt stay two conversations, and one session whose history no longer continues (compacted,
summarised) stays one. Each source is listed in docs/session-format.md with how it was observed.

Every value is the client's: untrusted. It is kept only when it is short and made of plain characters; a longer or
odd one stands as a hash of itself (it still tells sessions apart, and is never shown as the client wrote it).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from enum import Enum
from typing import Any, Iterable

MAX_VALUE = 128  # characters of an identity kept as sent
PLAIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@+=/-]*")
CLAUDE_CODE_USER_ID = re.compile(r"_session_([0-9A-Za-z][0-9A-Za-z-]{7,127})$")  # user_<hash>_account_<…>_session_<uuid>


class IdentityKind(str, Enum):
    """Where an identity comes from; its value is what the session file keeps."""

    CLAUDE_CODE_SESSION = "claude-code-session"  # X-Claude-Code-Session-Id, or metadata.user_id's session part
    CODEX_THREAD = "codex-thread"  # Codex's thread-id / thread_id header (one conversation of a session)
    CODEX_SESSION = "codex-session"  # Codex's session_id / session-id (older: conversation_id) header
    OPENCODE_SESSION = "opencode-session"  # x-opencode-session
    SESSION_HEADER = "session-header"  # x-session-id, x-session-affinity: a gateway's or an app's own
    METADATA_SESSION = "metadata-session"  # metadata.session_id / conversation_id / thread_id in the body
    CONVERSATION = "conversation"  # Responses' `conversation` (an id, or {"id": …})
    SESSION_CACHE_KEY = "session-cache-key"  # prompt_cache_key of a client that sets it to its session id (Codex,
    # opencode: told by their User-Agent)
    PROMPT_CACHE_KEY = "prompt-cache-key"  # any other client's: anything, maybe one key for all its sessions
    METADATA_USER = "metadata-user"  # metadata.user_id of another shape than Claude Code's
    USER = "user"  # the body's `user`: an end user, often the same across sessions


# Kinds that name one session: a request of it that no longer continues its history is still that session (a
# compaction). The others only keep apart what differs: an end user or a cache key may span many sessions.
SESSION_KINDS = frozenset({IdentityKind.CLAUDE_CODE_SESSION, IdentityKind.CODEX_THREAD, IdentityKind.CODEX_SESSION,
                           IdentityKind.OPENCODE_SESSION, IdentityKind.SESSION_HEADER,
                           IdentityKind.METADATA_SESSION, IdentityKind.CONVERSATION,
                           IdentityKind.SESSION_CACHE_KEY})
# User-Agents of clients whose prompt_cache_key is their session id (their published code; Codex's observed here)
SESSION_KEYED_CLIENTS = re.compile(r"^(codex_|opencode/)", re.IGNORECASE)


@dataclass(frozen=True)
class Identity:
    kind: IdentityKind
    value: str
    source: str = ""  # where it was read ("header x-claude-code-session-id"): said, never compared

    @property
    def names_a_session(self) -> bool:
        return self.kind in SESSION_KINDS

    def same(self, other: "Identity | None") -> bool:
        return other is not None and (self.kind, self.value) == (other.kind, other.value)

    def shown(self) -> str:
        return f"{self.kind.value} {self.value[:40]}"

    def record(self) -> dict[str, Any]:
        return {"kind": self.kind.value, "value": self.value, "source": self.source[:200]}


@dataclass(frozen=True)
class Hints:
    """What a request says about itself beside its identity (Codex's headers): a sub-agent's kind and parent."""

    subagent: str = ""  # x-openai-subagent (or the turn metadata's subagent_kind): "compact", "review", …
    parent: Identity | None = None  # x-codex-parent-thread-id (or parent_thread_id): the thread that started this one
    request_kind: str = ""  # x-codex-turn-metadata's request_kind: "turn", …


def bounded(value: Any) -> str:
    """The identity as kept: as sent when short and plain, else `sha256:` and its first 32 hex digits."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        return ""
    value = value.strip()
    if not value:
        return ""
    if len(value) <= MAX_VALUE and PLAIN.fullmatch(value):
        return value
    return "sha256:" + hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:32]


# Headers in the order they are believed: the most specific first (a Codex thread within its session).
HEADER_SOURCES: tuple[tuple[str, IdentityKind], ...] = (
    ("x-claude-code-session-id", IdentityKind.CLAUDE_CODE_SESSION),
    ("thread-id", IdentityKind.CODEX_THREAD), ("thread_id", IdentityKind.CODEX_THREAD),
    ("session_id", IdentityKind.CODEX_SESSION), ("session-id", IdentityKind.CODEX_SESSION),
    ("conversation_id", IdentityKind.CODEX_SESSION), ("conversation-id", IdentityKind.CODEX_SESSION),
    ("x-opencode-session", IdentityKind.OPENCODE_SESSION),
    ("x-session-id", IdentityKind.SESSION_HEADER), ("x-session-affinity", IdentityKind.SESSION_HEADER),
)
METADATA_SESSION_FIELDS = ("session_id", "conversation_id", "thread_id")


def identity_of(headers: Iterable[tuple[str, str]], body: Any) -> Identity | None:
    """The request's session identity: a session header first, then the body's fields, strongest first; None when
    the client says nothing (its requests are then grouped by what they say)."""
    headers = list(headers)
    found = _from_headers(headers) or _from_body(body if isinstance(body, dict) else {})
    if found is not None and found.kind is IdentityKind.PROMPT_CACHE_KEY and SESSION_KEYED_CLIENTS.match(
            _by_name(headers).get("user-agent", "")):
        return Identity(IdentityKind.SESSION_CACHE_KEY, found.value, found.source)
    return found


def hints_of(headers: Iterable[tuple[str, str]]) -> Hints:
    """Codex's word on a request: its sub-agent kind and parent thread, from its headers or its turn metadata (a
    JSON object in x-codex-turn-metadata, read defensively)."""
    named = _by_name(list(headers))
    turn = _json_object(named.get("x-codex-turn-metadata", ""))
    parent = bounded(named.get("x-codex-parent-thread-id") or turn.get("parent_thread_id"))
    subagent = bounded(named.get("x-openai-subagent") or turn.get("subagent_kind"))[:64]
    return Hints(subagent, Identity(IdentityKind.CODEX_THREAD, parent, "header x-codex-parent-thread-id")
                 if parent else None, bounded(turn.get("request_kind"))[:64])


def _json_object(text: str) -> dict[str, Any]:
    if not text or len(text) > 8192 or not text.lstrip().startswith("{"):
        return {}
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def _by_name(headers: list[tuple[str, str]]) -> dict[str, str]:
    named: dict[str, str] = {}
    for name, value in headers:
        named.setdefault(name.lower(), value)  # the first of a repeated header
    return named


def _from_headers(headers: list[tuple[str, str]]) -> Identity | None:
    named = _by_name(headers)
    for name, kind in HEADER_SOURCES:
        value = bounded(named.get(name, ""))
        if value:
            return Identity(kind, value, f"header {name}")
    return None


def _from_body(body: dict[str, Any]) -> Identity | None:
    metadata = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
    claude = claude_code_session(metadata.get("user_id"))
    if claude:
        return Identity(IdentityKind.CLAUDE_CODE_SESSION, claude, "body metadata.user_id")
    client = body.get("client_metadata") if isinstance(body.get("client_metadata"), dict) else {}
    for holder, where in ((client, "client_metadata"), (metadata, "metadata")):  # (Codex: thread before session)
        for name in METADATA_SESSION_FIELDS[::-1] if holder is client else METADATA_SESSION_FIELDS:
            value = bounded(holder.get(name))
            if value:
                return Identity(IdentityKind.METADATA_SESSION, value, f"body {where}.{name}")
    conversation = body.get("conversation")
    value = bounded(conversation.get("id") if isinstance(conversation, dict) else conversation)
    if value:
        return Identity(IdentityKind.CONVERSATION, value, "body conversation")
    for value, kind, source in ((body.get("prompt_cache_key"), IdentityKind.PROMPT_CACHE_KEY, "body prompt_cache_key"),
                                (metadata.get("user_id"), IdentityKind.METADATA_USER, "body metadata.user_id"),
                                (body.get("user"), IdentityKind.USER, "body user")):
        kept = bounded(value)
        if kept:
            return Identity(kind, kept, source)
    return None


def claude_code_session(user_id: Any) -> str:
    """The session id Claude Code's metadata.user_id carries: `user_<hash>_account_<uuid>_session_<uuid>`, or (read
    defensively, should it become one) a JSON object with a `session_id`; "" for any other shape."""
    if not isinstance(user_id, str) or len(user_id) > 4096:
        return ""
    found = CLAUDE_CODE_USER_ID.search(user_id.strip())
    if found and user_id.startswith("user_"):
        return bounded(found.group(1))
    if user_id.lstrip().startswith("{"):
        try:
            data = json.loads(user_id)
        except (ValueError, RecursionError):
            return ""
        if isinstance(data, dict):
            return bounded(data.get("session_id"))
    return ""
