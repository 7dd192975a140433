"""Hostile sessions written by ctxpane's own writer all open again (issue 41, item 2): integers past 2**63 and
values nested up to and past the reader's 64 levels, wherever a session holds a free value (a reply's own fields,
usage, request parameters, tool schemas, variables, message parts), odd Unicode everywhere, and a tail a kill or a
power cut leaves (half a line, NUL bytes); reopened by the real reader, each body read, appended to again."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tui.context.formats.schemas import depth_problem
from tui.context.messages import Message, Provenance
from tui.context.untrusted.outside_files import MAX_INT
from tui.sessions.model import RequestRecord, Session
from tui.sessions.store import SessionAppender, load_session

pytestmark = pytest.mark.bulk

TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=30)  # any character a str holds but a surrogate
KEYS = st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=12)
HUGE = st.one_of(st.integers(MAX_INT, 2 ** 200), st.integers(-2 ** 200, -MAX_INT - 1),
                 st.sampled_from([MAX_INT - 1, MAX_INT, -MAX_INT, -MAX_INT - 1]))
LEAF = st.one_of(st.none(), st.booleans(), st.integers(-1000, 1000), HUGE, TEXT,
                 st.floats(allow_nan=False, allow_infinity=False))


@st.composite
def deep(draw: Any) -> Any:
    """A value nested 40 to 90 levels, arrays and objects as a drawn pattern says (cheap to draw at any depth)."""
    levels = draw(st.integers(40, 90))
    pattern = draw(st.integers(0, 2 ** 90 - 1))
    key = draw(KEYS)
    value = draw(LEAF)
    for level in range(levels):
        value = {key: value} if pattern >> level & 1 else [value, level]
    return value


VALUE = st.one_of(LEAF, deep(), st.dictionaries(KEYS, LEAF, max_size=3), st.lists(LEAF, max_size=3))
FREE = st.dictionaries(KEYS, VALUE, max_size=3)
TAIL = st.one_of(st.just(b""), st.binary(min_size=1, max_size=300).filter(lambda b: b"\n" not in b),
                 st.integers(1, 9000).map(lambda n: b"\x00" * n),
                 st.tuples(st.binary(max_size=50).filter(lambda b: b"\n" not in b), st.integers(1, 5000))
                 .map(lambda pair: pair[0] + b"\x00" * pair[1]))


@st.composite
def sessions(draw: Any) -> Session:
    session = Session(title=draw(TEXT) or "t")
    session.params = {key: value for key, value in draw(FREE).items() if key not in ("model", "messages", "tools")}
    session.variables = {"v1": draw(VALUE)} if draw(st.booleans()) else {}
    if draw(st.booleans()):
        session.tools = [{"type": "function", "function": {"name": "f", "description": draw(TEXT),
                                                           "parameters": {"type": "object", "properties": draw(FREE)}}}]
    for number in range(1, draw(st.integers(1, 3)) + 1):
        session.messages.append(Message("user", draw(TEXT), provenance=Provenance("user", True), id=session.new_id()))
        if draw(st.booleans()):
            session.messages.append(Message("assistant", [{"type": "text", "text": draw(TEXT), "extra": draw(VALUE)}],
                                            tool_calls=[{"id": "c", "type": "function", "extra": draw(VALUE),
                                                         "function": {"name": "f", "arguments": "{}"}}],
                                            provenance=Provenance("model", True), id=session.new_id()))
        wire = [{"role": m.role, "content": m.content if isinstance(m.content, str) else draw(TEXT)}
                for m in session.messages]
        # A body is kept byte for byte as sent: one past the reader's bounds is never recorded (the tap checks, the
        # app's parameters and tools come from files read within them), so only what a body can hold is sent.
        body: dict[str, Any] = {"model": "m", "messages": wire}
        for key, value in [*session.params.items(), ("tools", session.tools)]:
            if value is not None and not depth_problem({key: value}) and _small_ints(value):
                body[key] = value
        reply = {"content": draw(TEXT), "provider_usage": draw(FREE), "extra": draw(VALUE)}
        record = RequestRecord(number, "2026-12-07T00:00:00+00:00", body, reply=reply, usage=draw(FREE),
                               message_ids=[m.id for m in session.messages],
                               message_count=len(session.messages))
        session.requests.append(record)
    return session


def _small_ints(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, int) and abs(item) >= MAX_INT:
            return False
    return True


def _reopen(path) -> Session:
    opened = load_session(path)
    for record in opened.session.requests:
        record.body  # noqa: B018 - a body is read (and checked) only when asked for
    return opened.session


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("hostile")


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.data_too_large])
@given(session=sessions(), changed=VALUE, tail=TAIL)
def test_every_hostile_session_ctxpane_writes_opens_again(folder, session, changed, tail):
    path = folder / "hostile.ctxpane.json"
    path.unlink(missing_ok=True)
    appender = SessionAppender(sync=False)
    appender.append(session, path)
    session.requests[-1].reply = {**session.requests[-1].reply, "extra": changed}  # a change, written as one
    appender.append(session, path)
    path.write_bytes(path.read_bytes() + tail)
    reopened = _reopen(path)
    held = [session.params, session.variables, session.tools, [(r.reply, r.usage) for r in session.requests],
            [(m.content, m.tool_calls) for m in session.messages]]
    if not _small_ints(held):  # a figure past 2**63 is kept, as text, and said
        assert "kept as text" in "; ".join(reopened.read_notes)
    assert [m.content for m in reopened.messages if m.role == "user"] == \
        [m.content for m in session.messages if m.role == "user"]
    assert len(reopened.requests) == len(session.requests)
    reopened.messages.append(Message("user", "after", provenance=Provenance("user", True), id=reopened.new_id()))
    SessionAppender(sync=False).append(reopened, path)  # the next save cuts the tail off and goes on
    again = _reopen(path)
    assert again.messages[-1].content == "after" and b"\x00" not in path.read_bytes()
