"""The writer checks what the reader accepts (issue 41, item 2): a value past one of the reader's bounds (an integer
of 2**63 or more, nesting past 64 levels counted in the line that holds it) is written in a form the reader takes,
with a note that says so; and a file whose last write a power cut or a kill left as NULs or half a line opens with
every whole line before it, and says so."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from controller_helpers import harness  # noqa: F401 - a fixture
from tui.context.messages import Message, Provenance
from tui.sessions.model import RequestRecord, Session
from tui.sessions.store import SessionAppender, load_session

HUGE = 2 ** 63


def nested(levels: int, leaf: Any = "leaf") -> Any:
    """A value of exactly `levels` levels of arrays and objects (arrays and objects in turn)."""
    value = leaf
    for level in range(levels):
        value = {"x": value} if level % 2 else [value]
    return value


def _session(body: dict[str, Any], reply: dict[str, Any], kind: str = "chat") -> Session:
    session = Session(title="bounds")
    session.messages.append(Message("user", "hi", provenance=Provenance("user", True), id=session.new_id()))
    session.requests.append(RequestRecord(1, "2026-12-07T00:00:00+00:00", body, reply=reply, format=kind,
                                          message_ids=[session.messages[0].id], message_count=1))
    return session


def objects(levels: int, leaf: Any) -> Any:
    """`levels` objects, one in the other (a change is written as nested changes into objects, not arrays)."""
    value = leaf
    for _ in range(levels):
        value = {"x": value}
    return value


BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def _reopened(session: Session, path: Path):
    SessionAppender().append(session, path)
    opened = load_session(path)
    for record in opened.session.requests:
        record.body  # noqa: B018 - a body is checked when it is read
    return opened


def test_a_usage_figure_past_2_63_from_a_messages_upstream_is_kept_as_text_with_a_note(tmp_path):
    reply = {"content": "ok", "provider_usage": {"input_tokens": HUGE, "output_tokens": -HUGE - 5}}
    opened = _reopened(_session(BODY, reply, "messages"), tmp_path / "usage.ctxpane.json")
    (record,) = opened.session.requests
    assert record.reply["provider_usage"] == {"input_tokens": str(HUGE), "output_tokens": str(-HUGE - 5)}
    assert any("reply.provider_usage.input_tokens" in note for note in record.bounded)
    assert "kept as text" in opened.note


def test_a_record_usage_past_2_63_is_kept_as_text(tmp_path):
    session = _session(BODY, {"content": "ok"})
    session.requests[0].usage = {"input_tokens": HUGE}
    (record,) = _reopened(session, tmp_path / "usage.ctxpane.json").session.requests
    assert record.usage == {"input_tokens": str(HUGE)}


@pytest.mark.parametrize("setting", ["tools", "params"])
def test_a_tool_schema_or_a_parameter_within_the_depth_bound_opens_again(tmp_path, setting):
    # one level under the bound where a session of version 1 holds it: the tools list, a parameter's value
    session = _session(BODY, {"content": "ok"})
    if setting == "tools":
        session.tools = [{"type": "function", "function": {"name": "f", "parameters": {
            "type": "object", "properties": nested(63 - 5)}}}]
    else:
        session.params = {"response_format": nested(63 - 2)}
    opened = _reopened(session, tmp_path / "deep.ctxpane.json")
    held = getattr(opened.session, setting)
    assert held is not None and "nested past" in opened.note


def test_a_deep_value_kept_whole_when_it_fits_and_changes_written_flat_when_a_change_would_not(tmp_path):
    """A change nested in a change adds two levels a step (log_diff): a leaf 40 levels down that changes is written
    as the field set whole, which fits, not as 40 nested changes, which would not."""
    path = tmp_path / "grow.ctxpane.json"
    session = _session(BODY, {"content": "ok", "extra": objects(40, 1)})
    appender = SessionAppender()
    appender.append(session, path)
    session.requests[0].reply = {"content": "ok", "extra": objects(40, 2)}
    appender.append(session, path)
    (record,) = load_session(path).session.requests
    assert record.reply["extra"] == objects(40, 2) and not record.bounded


def _written(path: Path) -> bytes:
    session = _session(BODY, {"content": "ok"})
    SessionAppender().append(session, path)
    return path.read_bytes()


TAILS = {"NULs of a power cut": b"\x00" * 4096, "half a line": b'{"t":"st","d":{"s":{"ti',
         "half a line then NULs": b'{"t":"st","d":' + b"\x00" * 5000}


@pytest.mark.parametrize("tail", TAILS)
def test_a_nul_or_torn_tail_is_left_out_with_a_notice_and_the_next_save_goes_on(tmp_path, tail):
    path = tmp_path / "tail.ctxpane.json"
    whole = _written(path)
    path.write_bytes(whole + TAILS[tail])
    opened = load_session(path)
    assert f"the {len(TAILS[tail]):,} " in opened.note and "cut off at the next save" in opened.note
    assert "\n" not in opened.note
    assert [m.content for m in opened.session.messages] == ["hi"]
    session = opened.session
    session.messages.append(Message("user", "after", provenance=Provenance("user", True), id=session.new_id()))
    SessionAppender().append(session, path)
    again = load_session(path)
    assert [m.content for m in again.session.messages] == ["hi", "after"] and not again.note
    assert path.read_bytes().startswith(whole) and b"\x00" not in path.read_bytes()


@pytest.mark.parametrize("after", [b"", b"\x00" * 4096], ids=["nothing after", "NULs after"])
def test_a_whole_last_line_that_lost_only_its_newline_is_kept_and_the_next_save_ends_it(tmp_path, after):
    """A write cut right before its newline leaves a whole line: it was taken for a torn one, left out, and cut off
    for good at the next save (its message lost). It is kept, and the next append writes the newline first."""
    path = tmp_path / "unended.ctxpane.json"
    whole = _written(path)
    session = load_session(path).session
    session.messages.append(Message("user", "kept", provenance=Provenance("user", True), id=session.new_id()))
    SessionAppender().append(session, path)
    path.write_bytes(path.read_bytes()[:-1] + after)  # the last newline never reached the disk
    opened = load_session(path)
    assert [m.content for m in opened.session.messages] == ["hi", "kept"]
    assert bool(opened.note) == bool(after) and ("NUL" in opened.note) == bool(after)  # only the NULs are left out
    session = opened.session
    session.messages.append(Message("user", "after", provenance=Provenance("user", True), id=session.new_id()))
    SessionAppender().append(session, path)
    again = load_session(path)
    assert [m.content for m in again.session.messages] == ["hi", "kept", "after"] and not again.note
    assert path.read_bytes().startswith(whole) and path.read_bytes().endswith(b"\n")


def test_nuls_before_the_last_whole_line_are_still_refused(tmp_path):
    """Only a tail is cut: NULs with whole lines after them are damage in the middle of the file."""
    from tui.sessions.store import SessionFileError

    path = tmp_path / "middle.ctxpane.json"
    whole = _written(path)
    first = whole.index(b"\n") + 1
    path.write_bytes(whole[:first] + b"\x00" * 10 + b"\n" + whole[first:])
    with pytest.raises(SessionFileError):
        load_session(path)


def test_the_cli_says_what_opening_left_out_on_stderr(tmp_path, capsys):
    from tui.cli import main

    path = tmp_path / "tail.ctxpane.json"
    path.write_bytes(_written(path) + b"\x00" * 4096)
    assert main(["export", str(path), "--format", "json", "-o", str(tmp_path / "out.json")]) == 0
    said = capsys.readouterr().err
    assert said.count("\n") == 1 and said.startswith(f"{path}: ") and "4,096 NUL bytes" in said


async def test_the_app_says_what_opening_left_out(harness, tmp_path):
    from tui.controller.events import Notice

    ctl = await harness.ready()
    path = tmp_path / "tail.ctxpane.json"
    path.write_bytes(_written(path) + b"\x00" * 4096)
    ctl.open_file(path)
    await harness.idle()
    assert ctl.file.session_file == path
    assert any("4,096 NUL bytes" in notice.text and "\n" not in notice.text for notice in harness.of(Notice))


async def test_a_message_as_deep_as_its_line_allows_is_not_sent_in_a_body_its_file_could_not_open(tmp_path, monkeypatch):
    """A file's message may nest as deep as a message line holds; a request body wraps it further. Sent, that body
    was recorded and the file then refused it ("the body of request 1 is nested too deeply"): now it is not sent,
    the user is told why, and the file opens with every request."""
    from controller_helpers import connected
    from window_servers import WindowServer
    from tui.context.messages import Message, Provenance
    from tui.controller.events import Notice
    from tui.sessions.model import Session
    from tui.sessions.store import SessionAppender, load_session

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    deep: object = "leaf"
    for _ in range(60):
        deep = {"k": deep}
    session = Session(title="deep")
    session.messages.append(Message("user", [{"type": "text", "text": "hi", "extra": deep}], id=session.new_id()))
    session.messages.append(Message("assistant", "hello", provenance=Provenance("model", True), id=session.new_id()))
    path = tmp_path / "deep.ctxpane.json"
    SessionAppender().append(session, path)
    assert not load_session(path).note
    with WindowServer("vllm", n_ctx=4096) as server:
        made = await connected(tmp_path, server.url)
        made.ctl.open_file(path)
        await made.idle()
        made.ctl.submit("and now?")
        await made.until_replied()
        notices = [event.text for event in made.of(Notice)]
        made.ctl.close()
        await made.idle()
    assert any("not sent: a session file could not hold this request" in text for text in notices), notices
    for record in load_session(path).session.requests:
        assert record.body is not None  # every recorded body reads back
