"""Replay: what was sent at each step of a session, re-rendered from the stored request.

The stored body holds the exact wire messages sent (fences included), so rendering it again with
the session's template must give the stored document byte for byte; the hash proves it. A fresh
rendering of the same conversation with today's template and tokenizer shows any drift.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from tui.context.assemble import Snapshot, assemble
from tui.context.cache import CachePrefix, RequestShape, cache_prefix
from tui.context.fences import FenceStyle
from tui.context.request import RequestSettings, build_request
from tui.context.template_library import ChatTemplate
from tui.context.tokens import SegmentCache, Tokenizer, token_starts

from .model import RequestRecord, Session


@dataclass
class Step:
    number: int
    record: RequestRecord
    snapshot: Snapshot
    matches: bool  # the re-rendered document has the stored hash
    prefix: CachePrefix
    shape: RequestShape
    drift: dict | None = None  # first difference against a fresh rendering, if any
    notes: list[str] = field(default_factory=list)


def document_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def first_difference(ours: str, theirs: str, context: int = 40) -> dict | None:
    if ours == theirs:
        return None
    index = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), min(len(ours), len(theirs)))
    return {"index": index, "line": ours.count("\n", 0, index) + 1,
            "stored": ours[max(0, index - context):index + context],
            "fresh": theirs[max(0, index - context):index + context]}


class Replayer:
    def __init__(self, session: Session, template: ChatTemplate, tokenizer: Tokenizer, cache_rule: str = "llama.cpp"):
        self.session, self.template, self.tokenizer, self.cache_rule = session, template, tokenizer, cache_rule
        self.cache = SegmentCache()
        self._shapes: dict[int, RequestShape] = {}

    def __len__(self) -> int:
        return len(self.session.requests)

    def _stored_snapshot(self, record: RequestRecord) -> Snapshot:
        body = record.body
        return assemble(body.get("messages", []), self.template, self.tokenizer, self.session.variables,
                        True, body.get("tools"), self.cache)

    def _shape(self, index: int, snapshot: Snapshot) -> RequestShape:
        if index not in self._shapes:
            wire = snapshot.wire
            record = self.session.requests[index]
            self._shapes[index] = RequestShape(
                snapshot.document.text, token_starts(snapshot.document, self.tokenizer, self.template.special_strings(),
                                                     self.cache),
                [f"w{i}" for i in range(len(wire))], [str(m.get("content", "")) for m in wire],
                [m.get("role", "") for m in wire], record.body.get("tools"), dict(self.session.variables),
                frozenset(d.get("message_id", "") for d in record.dropped))
        return self._shapes[index]

    def step(self, index: int, check_drift: bool = True) -> Step:
        """Step `index` (0-based): the stored request shown as it was, with its checks."""
        record = self.session.requests[index]
        snapshot = self._stored_snapshot(record)
        shape = self._shape(index, snapshot)
        previous = None
        if index > 0:
            previous = self._shape(index - 1, self._stored_snapshot(self.session.requests[index - 1]))
        prefix = cache_prefix(previous, shape, snapshot.document, self.cache_rule)
        matches = not record.document_hash or document_hash(snapshot.document.text) == record.document_hash
        step = Step(index + 1, record, snapshot, matches, prefix, shape)
        if not matches:
            step.notes.append("the stored request renders differently with this template: the template or the "
                              "session file changed")
        if check_drift:
            step.drift = self.drift(index, snapshot)
        return step

    def drift(self, index: int, stored: Snapshot) -> dict | None:
        """The stored document against a fresh assembly of the same conversation with today's settings."""
        record = self.session.requests[index]
        count = record.message_count or len(self.session.messages)
        settings = RequestSettings(self.template, self.tokenizer, dict(self.session.variables), self.session.tools,
                                   True, self.session.policy_settings(), FenceStyle(enabled=self.session.fences))
        try:
            fresh = build_request(self.session.messages[:count], settings, cache=self.cache)
        except Exception as exc:  # noqa: BLE001 - a template that now refuses is itself drift
            return {"index": 0, "line": 1, "stored": "", "fresh": f"fresh rendering failed: {exc}"}
        return first_difference(stored.document.text, fresh.document.text)
