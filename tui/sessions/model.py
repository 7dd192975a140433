"""The session file: one JSON object per conversation, versioned, never holding an API key.

These dataclasses are what the app and the engine use; a file reaches them only through the
schema in tui/sessions/schema.py (see parse.py). Layout (version 1), documented in docs/session-format.md:
    {"format": "ctxpane-session", "version": 1, "id", "title", "created", "updated",
     "endpoint": {"base_url", "model"}, "template": {"name", "origin", "text"?}, "tokenizer",
     "policy": {...PolicySettings}, "fences": bool, "variables": {}, "tools": [...]|null,
     "messages": [{role, content, ..., provenance, pinned, id}],
     "next_id": int (the next message id's number; absent in older files: one past the highest used),
     "requests": [{number, time, body, reply, usage, cached_reported, timings, document_hash,
                   document_tokens, tokens_exact, dropped, predicted_cached, cache_cause,
                   cache_class, cache_source, cache_place, keep_all_tokens, template, tokenizer,
                   message_count, message_ids, reply_id, fit, received, cost, format, context,
                   sent, identity, compaction}]}
"""

from __future__ import annotations

import re
import uuid
import weakref
from collections import deque
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable

from tui.context.json_types import JSONObject
from tui.context.policy.truncation import PolicySettings
from tui.context.messages import Message, Provenance
from tui.sessions.schema_types import MAX_TEXT

FORMAT = "ctxpane-session"
VERSION = 1
MAX_NEXT_ID = 10 ** 12  # the id counter's bound (ids are "m" and a number)
_NUMBERED = re.compile(r"m([0-9]{1,13})")


class SessionFormatError(ValueError):
    """A session file that cannot be read as it is: the message says what and where."""


class NewerVersion(SessionFormatError):
    """Written by a newer ctxpane: opened read-only, never overwritten."""


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class _Body:
    """RequestRecord.body: the body as a dict; for a record read from a session file, rebuilt from the file the
    first time it is read (opening a session reads no body: a session of a thousand requests would otherwise
    build a thousand copies of its conversation). The last LOADED_BODIES rebuilt stay; an older one is rebuilt
    again when it is read again."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, record: Any, owner: type | None = None) -> Any:
        if record is None:
            raise AttributeError(self.name)  # no default: the dataclass field stays required
        state = record.__dict__
        body = state.get("_body")
        if body is None:
            loader = state.get("_body_loader")
            if loader is None:
                raise AttributeError(self.name)
            body = state["_body"] = loader()
            _LOADED.append(weakref.ref(record))
            while len(_LOADED) > LOADED_BODIES:
                old = _LOADED.popleft()()
                if old is not None and old.__dict__.get("_body_loader") is not None:
                    old.__dict__.pop("_body", None)
        return body

    def __set__(self, record: Any, value: JSONObject) -> None:
        record.__dict__["_body"] = value
        for name in ("_body_loader", "_body_text", "_text_loader"):
            record.__dict__.pop(name, None)


LOADED_BODIES = 16
_LOADED: deque[weakref.ref[Any]] = deque()


@dataclass
class RequestRecord:
    number: int
    time: str
    body: JSONObject = _Body()  # type: ignore[assignment]  # (a descriptor: required, and rebuilt lazily from a file)
    reply: JSONObject = field(default_factory=dict)
    usage: JSONObject | None = None
    cached_reported: int | None = None
    timings: JSONObject | None = None
    document_hash: str = ""
    document_tokens: int = 0
    tokens_exact: bool = False
    dropped: list[JSONObject] = field(default_factory=list)
    predicted_cached: int | None = None
    cache_cause: str = ""
    cache_class: str = ""  # the cause's class (tui/context/cache/causes.py)
    cache_source: int | None = None  # the earlier request the predicted reuse comes from
    cache_place: str = ""  # where the server holds it ("slot 0", "prompt cache -> slot 0", ...)
    keep_all_tokens: int = 0
    template: str = ""
    tokenizer: str = ""
    message_count: int = 0  # session messages when it was sent: the conversation up to this request
    message_ids: list[str] = field(default_factory=list)  # session id of each message in body["messages"]
    reply_id: str = ""  # the session id of the message the reply became ("" if none came, or an older file)
    fit: JSONObject | None = None  # before sending: does it fit the server's window (tui/sessions/receipts.py)
    received: JSONObject | None = None  # after the reply: sent against received
    cost: JSONObject | None = None  # what it cost, with the session's running totals
    format: str = "chat"  # the body's wire format (tui/context/formats): "chat", "messages" or "responses"
    context: JSONObject | None = None  # a Responses request's context held by the server, as rebuilt (tui/tap/chains.py)
    sent: JSONObject | None = None  # how a tapped request was sent: method, path and query, headers (keys ***)
    identity: JSONObject | None = None  # the session the client said it is of, and a sub-agent's parent (the tap)
    compaction: JSONObject | None = None  # the client's own compaction of its history at this request (the tap)
    bounded: list[str] = field(default_factory=list)  # values its file keeps as text: past the reader's bounds

    @property
    def incomplete(self) -> bool:
        return bool(self.reply.get("incomplete"))

    @classmethod
    def lazy(cls, loader: Callable[[], JSONObject], text: Callable[[], str] | None = None,
             **fields: Any) -> "RequestRecord":
        """A record whose body is rebuilt by `loader` when first read (and `text`: its exact text)."""
        record = cls(body={}, **fields)
        record.__dict__.pop("_body")
        record.__dict__["_body_loader"] = loader
        if text is not None:
            record.__dict__["_text_loader"] = text
        return record

    def let_go_of_body(self, loader: Callable[[], JSONObject], text: Callable[[], str] | None = None) -> None:
        """The body is in the session file: free it here, rebuilt by `loader` when read again (the tap)."""
        self.__dict__.pop("_body", None)
        self.__dict__.pop("_body_text", None)
        self.__dict__["_body_loader"] = loader
        if text is not None:
            self.__dict__["_text_loader"] = text

    def set_exact_text(self, text: str) -> None:
        """The body's exact text as the client sent it (the tap): the session file keeps these bytes."""
        self.__dict__["_body_text"] = text

    def exact_text(self) -> str | None:
        """The exact text the body was sent as, when it is known apart from the dict (else None: the app's own
        requests, whose bytes are `request_text(body)`)."""
        text = self.__dict__.get("_body_text")
        if text is None and self.__dict__.get("_text_loader") is not None:
            text = self.__dict__["_text_loader"]()
        return text if isinstance(text, str) else None

    @property
    def body_loaded(self) -> bool:
        """Whether the body is in memory now (reading `body` would not rebuild it)."""
        return "_body" in self.__dict__


@dataclass(frozen=True)
class Branch:
    """A continuation of the conversation not shown now: the messages after its fork (tui/controller/branches.py)."""

    fork: str  # the id of the message it continues from; "" for the very start
    messages: tuple[Message, ...]
    label: str = ""  # how it came to be kept ("before edit #2")
    created: str = field(default_factory=lambda: now_iso())

    def to_record(self) -> JSONObject:
        return {"fork": self.fork, "label": self.label, "created": self.created,
                "messages": [m.to_record() for m in self.messages]}


@dataclass
class Session:
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    title: str = "New session"
    created: str = field(default_factory=now_iso)
    updated: str = field(default_factory=now_iso)
    base_url: str = ""
    model: str = ""
    # Nobody chose one yet: ChatML with no default system turn (see plain_chatml), saved with its default.
    template: JSONObject = field(default_factory=lambda: {"name": "chatml", "origin": "builtin",
                                                    "defaults": {"default_system": ""}})
    tokenizer: str = ""
    policy: JSONObject = field(default_factory=lambda: asdict(PolicySettings()))
    fences: bool = True
    variables: JSONObject = field(default_factory=dict)
    tools: list[JSONObject] | None = None
    params: JSONObject = field(default_factory=dict)  # extra body parameters sent as they are (temperature, seed, ...)
    messages: list[Message] = field(default_factory=list)
    requests: list[RequestRecord] = field(default_factory=list)
    branches: list[Branch] = field(default_factory=list)  # the continuations not shown (edits, re-sends)
    read_notes: list[str] = field(default_factory=list, compare=False)  # what reading the file changed (not saved)
    next_id: int = 0  # the number of the next message id: ids are never given twice in one file
    bounded: list[str] = field(default_factory=list)  # values its file keeps as text: past the reader's bounds
    draft: str = ""  # what the composer held, typed and not sent (version 2's settings; keys masked when written)

    def reserve_ids(self) -> None:
        """Before a message goes (a delete undo may bring back): the counter passes every id in use now."""
        kept = [*self.messages, *(m for branch in self.branches for m in branch.messages)]
        self.next_id = max(self.next_id, id_floor(kept, self.requests))

    def new_id(self) -> str:
        """A message id never used in this session file, even by a message deleted since."""
        kept = [*self.messages, *(m for branch in self.branches for m in branch.messages)]
        floor = id_floor(kept, self.requests) if self.next_id <= 0 else self.next_id
        taken = {m.id for m in kept}
        while f"m{floor}" in taken:
            floor += 1
        self.next_id = min(floor + 1, MAX_NEXT_ID)
        return f"m{floor}"

    def policy_settings(self) -> PolicySettings:
        return PolicySettings(**self.policy)

    def to_settings(self) -> JSONObject:
        """The session's own fields, as the file has them (no messages, requests or branches)."""
        return {"title": self.title, "created": self.created, "updated": self.updated,
                "endpoint": {"base_url": self.base_url, "model": self.model}, "template": self.template,
                "tokenizer": self.tokenizer, "policy": self.policy, "fences": self.fences, "variables": self.variables,
                "tools": self.tools, "params": self.params, "next_id": self.next_id,
                **({"bounded": self.bounded} if self.bounded else {}),
                **({"draft": self.draft[:MAX_TEXT]} if self.draft else {})}  # (none: an older file's settings)

    def to_dict(self, requests: bool = True) -> JSONObject:
        """The session as version 1's one object (export --format json); without `requests`, an empty list: no
        body is rebuilt."""
        return {"format": FORMAT, "version": VERSION, "id": self.id, "title": self.title, "created": self.created,
                "updated": self.updated, "endpoint": {"base_url": self.base_url, "model": self.model},
                "template": self.template, "tokenizer": self.tokenizer, "policy": self.policy,
                "fences": self.fences, "variables": self.variables, "tools": self.tools, "params": self.params,
                "messages": [m.to_record() for m in self.messages],
                "requests": [asdict(r) for r in self.requests] if requests else [], "next_id": self.next_id,
                **({"branches": [b.to_record() for b in self.branches]} if self.branches else {}),
                **({"bounded": self.bounded} if self.bounded else {})}


def id_floor(messages: list[Message], requests: list[RequestRecord]) -> int:
    """One past the highest numbered id ("m12") the session's messages and request records ever used."""
    highest = -1
    ids = [m.id for m in messages]
    for record in requests:
        ids.extend(record.message_ids)
        ids.extend(str(entry.get("message_id", "")) for entry in record.dropped)
    for ident in ids:
        found = _NUMBERED.fullmatch(ident)
        if found:
            highest = max(highest, int(found.group(1)))
    return min(highest + 1, MAX_NEXT_ID)


def recover_interrupted_reply(session: Session) -> bool:
    """A reply still streaming when the app died lives only in its request record: restore it.

    Returns True when a partial reply was turned back into an (incomplete) assistant message.
    """
    if not session.requests:
        return False
    record = session.requests[-1]
    if not record.incomplete or len(session.messages) != record.message_count:
        return False
    reply = record.reply
    if not (reply.get("content") or reply.get("tool_calls") or reply.get("reasoning")):
        return False
    session.messages.append(Message("assistant", reply.get("content") or "", tool_calls=reply.get("tool_calls") or None,
                                    reasoning_content=reply.get("reasoning") or None,
                                    provenance=Provenance("model", True), id=session.new_id(),
                                    incomplete=True))
    return True
