"""Replay: what was sent at each step of a session, re-rendered from the stored request.

The stored body holds the exact wire messages sent (fences included), so rendering it again with
the session's template must give the stored document byte for byte; the hash proves it. Drift is
measured on that same body: only the template (the document no longer has the stored hash) or the
tokenizer (the same tokenizer no longer gives the stored count) can drift. The session's current
messages, policy and fences are never compared: editing a session after its requests is not drift.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from tui.context.policy.truncation import LedgerEntry, PolicySettings
from tui.context.assemble import Snapshot
from tui.context.cache.prefix import CachePrefix, RequestShape
from tui.context.cache.predict import cache_prefix
from tui.context.document import first_difference
from tui.context.untrusted.fences import FenceStyle
from tui.context.errors import TemplateNotFound, TemplateRenderError
from tui.context.formats import FormatError, FormatKind, Parsed, parse_body
from tui.context.json_types import JSONObject
from tui.context.messages import Message, MessageError, wire_message
from tui.context.request import RequestSettings, RequestView, build_request
from tui.context.templates.library import ChatTemplate, builtin_template
from tui.context.tokens.counting import SegmentCache, Tokenizer

from tui.sessions.model import RequestRecord, Session
from tui.sessions.session_template import template_from_session


@dataclass
class Step:
    number: int
    record: RequestRecord
    view: RequestView
    matches: bool  # the re-rendered document has the stored hash
    drift: dict[str, Any] | None = None  # {"kind": "template"|"tokenizer", "line", "stored", "fresh"}, or None
    notes: list[str] = field(default_factory=list)

    @property
    def snapshot(self) -> Snapshot:
        return self.view.snapshot

    @property
    def prefix(self) -> CachePrefix:
        return self.view.prefix


def document_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def offline_tokenizer_name(recorded: str, template: ChatTemplate | str) -> str:
    """The tokenizer to replay with: the recorded one if it is shipped, else the template's family's own.

    The recorded name maps to an identity (registry.recorded_tokenizer): a shipped name is that
    tokenizer; a path, a server or anything else is an estimate now. A path recorded in a session file
    is never opened: the file would choose what ctxpane reads (a FIFO, /dev/zero). Name it with
    --tokenizer to count with it again. `template` is the template (its identity gives the family);
    a built-in's name is accepted too.
    """
    from tui.context.families.identity import template_identity
    from tui.context.families.registry import family_for_template, offline_tokenizer
    family = family_for_template(template) if isinstance(template, str) else template_identity(template).family
    return offline_tokenizer(recorded, family)


DELETED = -2  # the place of a message deleted from the session since the request (RequestShape.places)
ON_BRANCH = -3  # the place of a message kept on a branch not shown now


def ledger_entries(record: RequestRecord) -> list[LedgerEntry]:
    entries = []
    for item in record.dropped:
        try:
            entries.append(LedgerEntry(**item))
        except TypeError:
            continue  # a record from another version: show what can be shown
    return entries


def parsed_body(record: RequestRecord) -> Parsed:
    """The stored body read in its own wire format (chat completions, Messages, Responses)."""
    if record.format == "chat":  # (checked with the session file: read as it is)
        tools = record.body.get("tools")
        return Parsed(FormatKind.CHAT, list(record.body.get("messages", [])), tools if isinstance(tools, list) else None,
                      sources=list(range(len(record.body.get("messages", [])))), body=record.body)
    try:
        return parse_body(FormatKind(record.format), record.body)
    except (FormatError, ValueError) as exc:
        raise ValueError(f"request {record.number}: the stored body is not a {record.format} body: {exc}") from None


def record_wire(session: Session, record: RequestRecord,
                carried: dict[int, list[JSONObject]] | None = None) -> tuple[list[JSONObject], list[Any] | None]:
    """What the server rendered for a stored request, as chat-completions messages and tools: the body's own,
    with (for a Responses request that continues an earlier response) the context the server held before it.
    `carried`: what each earlier request of a chain added, kept across calls (see held_context)."""
    parsed = parsed_body(record)
    chain = (record.context or {}).get("chain") or []
    return with_held(parsed, held_context(session, chain, record.number, carried)), parsed.tools


def with_held(parsed: Parsed, held: list[JSONObject]) -> list[JSONObject]:
    """The request's messages with the context its server held put before its input (its instructions first)."""
    if not held:
        return parsed.messages
    head = 1 if parsed.messages and parsed.sources and parsed.sources[0] == -1 else 0
    return [*parsed.messages[:head], *held, *parsed.messages[head:]]


def held_context(session: Session, chain: list[int], before: int,
                 carried: dict[int, list[JSONObject]] | None = None) -> list[JSONObject]:
    """The context a Responses request's server held (previous_response_id), rebuilt from the earlier requests of
    the chain this session recorded: each one's input (its instructions are not carried over) and its response.
    With `carried` (a replayer's, kept for the session), what each earlier request adds is read from its body once:
    replaying a chain of n requests parses n bodies, not n²/2."""
    numbers = {r.number: r for r in session.requests} if carried is None or not set(chain) <= set(carried) else {}
    held: list[JSONObject] = []
    for number in chain:
        if number >= before:
            continue
        if carried is not None and number in carried:
            held += carried[number]
            continue
        earlier = numbers.get(number)
        if earlier is None:
            continue
        parsed = parsed_body(earlier)
        added = [*(m for m, source in zip(parsed.messages, parsed.sources) if source >= 0),
                 *reply_messages(earlier.reply)]
        if carried is not None:
            carried[number] = added
        held += added
    return held


def reply_messages(reply: JSONObject) -> list[JSONObject]:
    """A stored reply as the assistant message it adds to the context (none when nothing came back)."""
    message: JSONObject = {"role": "assistant", "content": reply.get("content") or ""}
    if reply.get("tool_calls"):
        message["tool_calls"] = reply["tool_calls"]
    if reply.get("reasoning"):
        message["reasoning_content"] = reply["reasoning"]
    return [message] if message["content"] or len(message) > 2 else []


def body_messages(record: RequestRecord, index: int, session: Session | None = None,
                  carried: dict[int, list[JSONObject]] | None = None) -> list[Message]:
    """The wire messages of a stored body, with the session ids they were sent for."""
    wire = record_wire(session, record, carried)[0] if session is not None else parsed_body(record).messages
    ids = record.message_ids if len(record.message_ids) == len(wire) else [f"w{i}" for i in range(len(wire))]
    try:
        return [wire_message(m, i, ids[i]) for i, m in enumerate(wire)]
    except MessageError as exc:
        raise ValueError(f"step {index + 1}: the stored request has a bad message: {exc}") from None


def body_marks(record: RequestRecord, view: RequestView) -> list[tuple[int, str]]:
    """The marks a body carries that chat completions cannot (Anthropic's cache_control breakpoints), placed on the
    document where they are."""
    if record.format != FormatKind.MESSAGES.value:
        return []
    from tui.context.cache.anthropic_marks import drawn_marks
    parsed = parsed_body(record)
    return drawn_marks(parsed, view) if parsed.breakpoints else []


class Replayer:
    def __init__(self, session: Session, template: ChatTemplate, tokenizer: Tokenizer, cache_rule: str | None = None):
        from tui.context.families.registry import offline_cache_rule
        self.session, self.template, self.tokenizer = session, template, tokenizer
        self.cache_rule = cache_rule or offline_cache_rule(session.model)  # (gpt-4o: OpenAI's, not llama.cpp's)
        self.cache = SegmentCache()
        self._views: dict[int, RequestView] = {}
        self._carried: dict[int, list[JSONObject]] = {}  # what each request of a Responses chain adds (held_context)

    def __len__(self) -> int:
        return len(self.session.requests)

    @property
    def llama_server(self) -> bool:
        """Whether the session's template is a llama.cpp server's: it continues a last assistant turn in any API."""
        return self.session.template.get("origin") == "server:llama.cpp"

    def body_settings(self, record: RequestRecord, template: ChatTemplate) -> RequestSettings:
        """Settings that render a stored body as it is: keep-all, and no fences (they are in the body already)."""
        return RequestSettings(template, self.tokenizer, dict(self.session.variables),
                               parsed_body(record).tools, True, PolicySettings("keep-all"),
                               FenceStyle(enabled=False), self.cache_rule,
                               model=str(record.body.get("model") or self.session.model or ""),
                               base_url=self.session.base_url,
                               prefill=record.format == FormatKind.MESSAGES.value or self.llama_server,
                               content_specials=self.llama_server,  # as it counted them when the tap recorded
                               exact=self.recorded_exactness(record))

    def recorded_exactness(self, record: RequestRecord) -> bool | None:
        """Whether the count was exact when it was recorded, as the recording vouched (the server's own ids for a probe
        text equal the local tokenizer's): the same tokenizer counts the same tokens now, so an exact record stays
        exact. A template whose family is not known (a server's own) cannot tell that again by itself. Another
        tokenizer (a what-if) is judged by its own identity (None)."""
        if not record.document_tokens or recorded_tokenizer(self.session, record) != self.tokenizer.name:
            return None
        return record.tokens_exact

    def stored_view(self, index: int) -> RequestView:
        """The request of step `index` (0-based) exactly as its body was sent, with its cache prefix.

        Each step's prefix is measured against the step before it: the missing steps are rendered
        in order, oldest first (a loop, not recursion: a session of any length replays).
        """
        if index in self._views:
            return self._views[index]
        first = index
        while first > 0 and first - 1 not in self._views:
            first -= 1
        for number in range(first, index + 1):
            if number not in self._views:
                previous = self._views[number - 1].shape if number > 0 else None
                self._views[number] = self._render(number, previous)
        return self._views[index]

    def stored_shape(self, index: int) -> RequestShape:
        """What the cache comparison needs of step `index`: that record alone is rendered, no other."""
        if index in self._views:
            return self._views[index].shape
        return self._render(index, None).shape

    def _render(self, index: int, previous: RequestShape | None) -> RequestView:
        record = self.session.requests[index]
        view = build_request(body_messages(record, index, self.session, self._carried),
                             self.body_settings(record, self.template), previous,
                             index + 1, cache=self.cache)
        ledger = ledger_entries(record)  # what the policy left out then, which the body no longer shows
        # A system prompt the client rewrote (a tapped request) keeps its id: it was changed, not dropped.
        # (rendered from the body as sent, fences already in it: whether the app fenced is not this render's);
        # each message named by its place in the session now (#N), a message deleted since as such
        now = {message.id: index for index, message in enumerate(self.session.messages) if message.id}
        kept = {m.id for branch in self.session.branches for m in branch.messages}
        places = [now.get(ident, ON_BRANCH if ident in kept else DELETED) if place >= 0 else place
                  for ident, place in zip(view.shape.message_ids, view.shape.places)]
        shape = replace(view.shape, dropped=frozenset(entry.message_id for entry in ledger
                                                      if entry.policy != "client-rewrite"), fenced=None,
                        places=places)
        prefix = cache_prefix(previous, shape, view.document, self.cache_rule)
        return replace(view, ledger=ledger, shape=shape, prefix=prefix, marks=body_marks(record, view))

    def step(self, index: int, check_drift: bool = True) -> Step:
        record = self.session.requests[index]
        view = self.stored_view(index)
        matches = bool(record.document_hash) and document_hash(view.document.text) == record.document_hash
        step = Step(index + 1, record, view, matches)
        if not record.document_hash:
            step.notes.append("the record has no document_hash: there is nothing to check the rendering against")
        elif not matches:
            step.notes.append("the stored request renders differently with this template: the template or the "
                              "session file changed")
        recorded = recorded_tokenizer(self.session, record)
        if recorded != self.tokenizer.name:
            step.notes.append(f"counted with {self.tokenizer.name}; the request was counted with {recorded}: "
                              "the counts are not compared")
        if check_drift:
            step.drift = self.drift(index, view)
        return step

    def drift(self, index: int, view: RequestView) -> dict[str, Any] | None:
        """What changed since the stored body was sent: its rendering (the template) or its count (the tokenizer).

        Only the body itself is rendered again, so a session edited after its requests shows no drift.
        """
        record = self.session.requests[index]
        text = view.document.text
        if record.document_hash and document_hash(text) != record.document_hash:
            return {"kind": "template", **self.template_difference(index, text)}
        fresh = view.sent_tokens  # (images included, as the stored count was made)
        if self.counts_comparable(record) and fresh != record.document_tokens:
            return {"kind": "tokenizer", "index": None, "line": None,
                    "stored": f"{record.document_tokens} tokens", "fresh": f"{fresh} tokens"}
        return None

    def counts_comparable(self, record: RequestRecord) -> bool:
        """A count is compared only with the tokenizer that made it: another one is a what-if, not drift."""
        return bool(record.document_tokens) and recorded_tokenizer(self.session, record) == self.tokenizer.name

    def template_difference(self, index: int, text: str) -> dict[str, Any]:
        """Where `text` leaves the stored document, when a template at hand still reproduces that document."""
        record = self.session.requests[index]
        for template in self.reference_templates(record):
            try:
                reference = build_request(body_messages(record, index, self.session, self._carried),
                                          self.body_settings(record, template),
                                          cache=self.cache).document.text
            except (TemplateRenderError, MemoryError, RecursionError, ValueError):
                continue  # a template that cannot render the body is no reference
            found = first_difference(reference, text, ("stored", "fresh"))
            if found and document_hash(reference) == record.document_hash:
                return found
        return {"index": None, "line": None, "stored": f"sha256 {record.document_hash[:16]}…",
                "fresh": f"sha256 {document_hash(text)[:16]}…"}  # nothing reproduces it: only the hashes differ

    def reference_templates(self, record: RequestRecord) -> list[ChatTemplate]:
        """Templates that may have rendered the body: the session's own, then the built-in the record names."""
        found: list[ChatTemplate] = []
        loaders: tuple[Callable[[], ChatTemplate], ...] = (lambda: template_from_session(self.session.template),
                                                           lambda: builtin_template(record.template))
        for load in loaders:
            try:
                template = load()
            except TemplateNotFound:
                continue
            if template != self.template and template not in found:
                found.append(template)
        return found


def recorded_tokenizer(session: Session, record: RequestRecord) -> str:
    return record.tokenizer or session.tokenizer
