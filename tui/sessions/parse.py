"""The gate in front of Session: bytes or JSON values in, a checked Session (or one clear line) out.

Everything that passes can be used by the app and the engine without further checks.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

import msgspec

from tui.context.json_types import JSONObject
from tui.context.messages import KEY_CHARS, UNTRUSTED_SOURCES, Message, Provenance, default_source
from tui.errors import schema_error_line

from tui.sessions import schema
from tui.sessions.model import FORMAT, VERSION, Branch, NewerVersion, RequestRecord, Session, SessionFormatError, id_floor, now_iso
from tui.sessions.safe_io import decode_problem, explain, structure_problem, text_problem
from tui.sessions.schema_types import MAX_MESSAGES, TITLE_LIMIT, List

_HEADER = msgspec.json.Decoder(schema.Header)
_SESSION = msgspec.json.Decoder(schema.SessionIn)


def decode_session(raw: bytes) -> tuple[Session, int]:
    """A session and the version it was written with; raises SessionFormatError with one clause."""
    problem = text_problem(raw)
    if problem:
        raise SessionFormatError(problem)
    try:
        header = _HEADER.decode(raw)
    except msgspec.ValidationError as exc:  # the header's own rule: the top level is an object
        if str(exc).startswith("Expected `object`"):
            raise SessionFormatError("holds JSON, but not a session object") from None
        raise SessionFormatError(decode_problem(raw, exc)) from None
    except (msgspec.DecodeError, RecursionError) as exc:
        raise SessionFormatError(decode_problem(raw, exc)) from None
    version = _check_header(header.format, header.version)
    try:
        parsed = _SESSION.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError) as exc:
        raise SessionFormatError(decode_problem(raw, exc)) from None
    _data, problem = structure_problem(raw)
    if problem:
        raise SessionFormatError(problem)
    return to_session(parsed), version


def session_from_dict(data: Any) -> Session:
    """The same gate for a JSON value already in memory (samples, copies); newer versions raise NewerVersion."""
    if not isinstance(data, dict):
        raise SessionFormatError("the file holds JSON, but not a session object")
    version = _check_header(data.get("format"), data.get("version"))
    if version > VERSION:
        raise NewerVersion(newer_note(version))
    return to_session(convert(data, schema.SessionIn))


def convert(data: Any, shape: Any, where: str = "") -> Any:
    """`data` as `shape`; an error names the field under `where` (".messages")."""
    try:
        return msgspec.convert(data, shape)
    except msgspec.ValidationError as exc:
        raise SessionFormatError(explain(schema_error_line(f"{exc} - at `${where}`" if where else str(exc)))) from None


def newer_note(version: int) -> str:
    return f"written by a newer ctxpane (session version {version}, this one reads {VERSION})"


def _check_header(format_: Any, version: Any) -> int:
    if format_ != FORMAT:
        shown = repr(format_) if isinstance(format_, (str, int, float, bool, type(None))) else type(format_).__name__
        raise SessionFormatError(f"not a ctxpane session (format is {shown[:60]}, expected {FORMAT!r})")
    if not isinstance(version, int) or isinstance(version, bool):
        raise SessionFormatError(f"the session has no valid 'version' (expected an integer from 1, "
                                 f"got {type(version).__name__})")
    if not 1 <= version <= 1000:
        raise SessionFormatError(f"field `version`: {str(version)[:20]} is out of range (1 to 1000)")
    return version


# -- structs to the dataclasses the rest of the code uses ---------------------------------------------------
def to_session(parsed: schema.SessionIn) -> Session:
    title = parsed.title
    clipped = len(title) > TITLE_LIMIT
    if clipped:  # a harmless free-text field too long: clipped and said, never a reason to refuse the file
        title = title[:TITLE_LIMIT - 1] + "…"
    session = Session(
        id=parsed.id or uuid.uuid4().hex[:12], title=title, created=parsed.created or now_iso(),
        updated=parsed.updated or now_iso(), base_url=parsed.endpoint.base_url, model=parsed.endpoint.model,
        template=_template(parsed.template), tokenizer=parsed.tokenizer, policy=msgspec.structs.asdict(parsed.policy),
        fences=parsed.fences, variables=dict(parsed.variables), tools=parsed.tools, params=dict(parsed.params),
        messages=[to_message(m, i) for i, m in enumerate(parsed.messages)],
        requests=[_request(r) for r in parsed.requests], bounded=list(parsed.bounded),
        draft=parsed.draft)
    branches = [(b, [to_message(m, i) for i, m in enumerate(b.messages)]) for b in parsed.branches if b.messages]
    kept = [*session.messages, *(m for _, messages in branches for m in messages)]
    # The counter never goes back: a file that names a lower one than its ids show is not believed.
    session.next_id = max(parsed.next_id or 0, id_floor(kept, session.requests))
    session.branches = _branches(session, branches)
    if clipped:
        session.read_notes.append(f"its title was {len(parsed.title):,} characters: clipped to {TITLE_LIMIT:,}")
    return session


def _branches(session: Session, parsed: list[tuple[Any, list[Message]]]) -> list[Branch]:
    """The file's branches, each message with an id no other message has (a message without one, or one a
    hand-edited file repeats, gets a new id: an undo acting on one id never touches another message), each
    continuing from a message that exists (a fork found nowhere: from the start, said in its label)."""
    seen = {m.id for m in session.messages}
    out = []
    for branch, messages in parsed:
        fresh = []
        for message in messages:
            if message.id in seen:
                message = replace(message, id=session.new_id())
            seen.add(message.id)
            fresh.append(message)
        out.append((branch, fresh))
    ids = seen
    return [Branch(b.fork if not b.fork or b.fork in ids else "", tuple(messages),
                   b.label if not b.fork or b.fork in ids else f"{b.label} (its fork was not found: from the start)",
                   b.created or now_iso()) for b, messages in out]


def _template(spec: schema.TemplateIn) -> JSONObject:
    out: dict[str, Any] = {"name": spec.name, "origin": spec.origin}
    if spec.text is not None:
        out["text"] = spec.text
    if spec.defaults:
        out["defaults"] = dict(spec.defaults)
    return out


def to_message(item: schema.MessageIn, index: int) -> Message:
    given = item.provenance or schema.ProvenanceIn()
    source = given.source or default_source(item.role)
    trusted = given.trusted if given.trusted is not None else source not in UNTRUSTED_SOURCES
    reasoning = next((r for r in (item.reasoning_content, item.reasoning, item.thinking) if r is not None), None)
    return Message(role=item.role, content=item.content, name=item.name, tool_calls=item.tool_calls,
                   tool_call_id=item.tool_call_id, reasoning_content=reasoning,
                   provenance=Provenance(source, trusted, given.label, given.key[:KEY_CHARS], given.recorded[:KEY_CHARS]),
                   pinned=item.pinned,
                   id=item.id or f"m{index}", incomplete=item.incomplete)


def _request(item: schema.RequestIn) -> RequestRecord:
    return RequestRecord(
        number=item.number, time=item.time, body=item.body, reply=item.reply, usage=item.usage,
        cached_reported=item.cached_reported, timings=item.timings, document_hash=item.document_hash,
        document_tokens=item.document_tokens, tokens_exact=item.tokens_exact,
        dropped=[msgspec.structs.asdict(entry) for entry in item.dropped], predicted_cached=item.predicted_cached,
        cache_cause=item.cache_cause, cache_class=item.cache_class, cache_source=item.cache_source,
        cache_place=item.cache_place, keep_all_tokens=item.keep_all_tokens, template=item.template,
        tokenizer=item.tokenizer, message_count=item.message_count, message_ids=list(item.message_ids), reply_id=item.reply_id,
        fit=_plain(item.fit), received=_plain(item.received), cost=_plain(item.cost), format=item.format,
        context=_plain(item.context), sent=_plain(item.sent), identity=_plain(item.identity),
        compaction=_plain(item.compaction), bounded=list(item.bounded))


def _plain(struct: msgspec.Struct | None) -> JSONObject | None:
    """A checked struct back as the plain dict the record holds (fields not in the schema are gone)."""
    if struct is None:
        return None
    plain = msgspec.to_builtins(struct)
    if not isinstance(plain, dict):  # a struct's builtins are always an object
        raise TypeError(f"{type(struct).__name__} did not become a JSON object")
    return plain


# -- plain message lists (ctxpane render, ctxpane import) -------------------------------------------------
def messages_from_data(data: Any, where: str = ".messages") -> list[Message]:
    """A JSON list of messages, checked like a session's; raises SessionFormatError."""
    items = convert(data, List(schema.MessageIn, MAX_MESSAGES), where)
    return [to_message(item, index) for index, item in enumerate(items)]


def tools_from_data(data: Any, where: str = ".tools") -> list[JSONObject] | None:
    if data is None:
        return None
    tools: list[JSONObject] = convert(data, schema.Tools, where)  # a list of objects: schema.Tools says so
    try:
        schema.check_tools(tools, where)
    except ValueError as exc:
        raise SessionFormatError(schema_error_line(str(exc))) from None
    return tools


def json_value(raw: bytes) -> Any:
    """Any JSON value from bytes, with the same file-wide bounds as a session (depth, keys, numbers)."""
    problem = text_problem(raw)
    if problem:
        raise SessionFormatError(problem)
    try:
        msgspec.json.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError) as exc:
        raise SessionFormatError(decode_problem(raw, exc)) from None
    data, problem = structure_problem(raw)
    if problem:
        raise SessionFormatError(problem)
    return data
