"""The session file of version 2 (issue 22): parts written once, bodies rebuilt byte for byte, appends only, old files
opened and converted with a backup, bodies read only when asked for."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from tui.context.messages import Message, Provenance
from tui.context.request_bytes import request_text
from tui.sessions.body_split import hole_text, join, split
from tui.sessions.model import RequestRecord, Session
from tui.sessions.store import SessionAppender, SessionFileError, convert_session, load_session
from tui.sessions.session_log import read_log

SAMPLES = sorted((ROOT / "sample_sessions").glob("*.ctxpane.json"))


def grow(session: Session, appender: SessionAppender, path: Path, body_of, steps: int, text_of=None) -> None:
    """A conversation of `steps` requests, each body made by `body_of(wire)` (its exact text by `text_of`)."""
    rng = random.Random(4)
    for step in range(steps):
        question = Message("user", f"question {step}: " + " ".join(rng.choice("abcdefgh") * 5 for _ in range(60)),
                           provenance=Provenance("user", True), id=session.new_id())
        session.messages.append(question)
        wire = [m.to_wire() for m in session.messages]
        record = RequestRecord(step + 1, "2026-11-02T09:00:00+00:00", body_of(wire), reply={"content": "",
                               "incomplete": True}, message_ids=[m.id for m in session.messages],
                               message_count=len(session.messages))
        if text_of is not None:
            record.set_exact_text(text_of(record.body))
        session.requests.append(record)
        appender.append(session, path)
        answer = f"answer {step} " + "z" * 100
        record.reply = {"content": answer, "incomplete": False, "usage": {"prompt_tokens": 10 * step}}
        session.messages.append(Message("assistant", answer, provenance=Provenance("model", True),
                                        id=session.new_id()))
        record.reply_id = session.messages[-1].id
        appender.append(session, path)


FORMATS = {
    "chat completions": lambda wire: {"model": "gpt-4o", "messages": wire, "stream": True,
                                      "tools": [{"type": "function", "function": {"name": "f", "description": "d" * 2000}}]},
    "responses": lambda wire: {"model": "gpt-5", "instructions": "be brief " * 200, "input": wire[1:], "stream": True},
    "anthropic": lambda wire: {"model": "claude-sonnet-4", "system": [{"type": "text", "text": "s" * 1500}],
                               "messages": wire[1:], "max_tokens": 100},
}
CLIENTS = {
    "compact": lambda body: json.dumps(body, separators=(",", ":"), ensure_ascii=False),
    "spaced ascii": lambda body: json.dumps(body),
    "indented": lambda body: json.dumps(body, indent=2),
}


@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize("shape", FORMATS)
def test_every_body_is_rebuilt_byte_for_byte_and_each_part_is_written_once(tmp_path, shape, client):
    path = tmp_path / "s.ctxpane.json"
    session = Session(title=shape)
    session.messages.append(Message("system", "You are careful.", provenance=Provenance("system_prompt", True),
                                    id=session.new_id()))
    texts = []

    def text_of(body):
        texts.append(CLIENTS[client](body))
        return texts[-1]
    grow(session, SessionAppender(), path, FORMATS[shape], 40, text_of)
    opened = load_session(path).session
    assert not any(record.body_loaded for record in opened.requests)  # opening rebuilt no body
    for record, text in zip(opened.requests, texts):
        assert record.exact_text() == text  # the client's bytes, whatever its spacing and escapes
        assert record.body == json.loads(text)
    assert [m.to_record() for m in opened.messages] == [m.to_record() for m in session.messages]
    size, last = path.stat().st_size, len(texts[-1].encode())
    assert size < 3 * last, (size, last)  # not 40 copies of a growing conversation
    raw = path.read_text()
    assert raw.count("d" * 2000) <= 1 and raw.count("be brief " * 200) <= 1 and raw.count("s" * 1500) <= 1


def test_the_apps_bodies_are_its_request_text_and_a_session_reopened_goes_on(tmp_path):
    path = tmp_path / "app.ctxpane.json"
    session = Session(title="app")
    grow(session, SessionAppender(), path, FORMATS["chat completions"], 10)
    grow(session, SessionAppender(), path, FORMATS["chat completions"], 5)  # another writer: reads, then appends
    opened = load_session(path).session
    assert len(opened.requests) == 15
    for record, mine in zip(opened.requests, session.requests):
        assert record.exact_text() == request_text(mine.body)
    assert [m.id for m in opened.messages] == [m.id for m in session.messages]


def test_an_edit_an_undo_and_a_branch_append_and_never_rewrite(tmp_path):
    path = tmp_path / "s.ctxpane.json"
    session = Session(title="edits")
    appender = SessionAppender()
    grow(session, appender, path, FORMATS["chat completions"], 3)
    before = path.read_bytes()
    session.messages[1] = Message("user", "edited", provenance=Provenance("user", True), id=session.messages[1].id)
    appender.append(session, path)
    from tui.sessions.model import Branch
    session.branches.append(Branch(session.messages[2].id, tuple(session.messages[3:]), "before edit #2"))
    del session.messages[3:]
    appender.append(session, path)
    after = path.read_bytes()
    assert after.startswith(before) and len(after) - len(before) < 2000  # appended: the file before is untouched
    opened = load_session(path).session
    assert opened.messages[1].content == "edited" and len(opened.messages) == 3
    assert [m.id for m in opened.branches[0].messages] == [m.id for m in session.branches[0].messages]


@pytest.mark.parametrize("sample", SAMPLES, ids=[p.name for p in SAMPLES])
def test_a_version_1_file_opens_replays_and_converts_with_a_backup(tmp_path, sample):
    path = tmp_path / sample.name
    path.write_bytes(sample.read_bytes())
    old = load_session(path)
    assert old.version == 1
    backup = convert_session(path)
    assert backup is not None and backup.read_bytes() == sample.read_bytes()
    new = load_session(path)
    assert new.version == 2 and new.session.to_dict() == old.session.to_dict()
    check = subprocess.run([sys.executable, "-m", "tui", "replay", "--check", str(path)], capture_output=True,
                           text=True, cwd=str(ROOT), timeout=120)
    before = subprocess.run([sys.executable, "-m", "tui", "replay", "--check", str(backup)], capture_output=True,
                            text=True, cwd=str(ROOT), timeout=120)
    assert (check.returncode, check.stdout) == (before.returncode, before.stdout)
    assert convert_session(path) is None  # version 2 already


def test_the_app_converts_a_version_1_file_when_it_first_writes_to_it(tmp_path):
    from tui.controller.saver import SessionWriter, snapshot

    path = tmp_path / "old.ctxpane.json"
    path.write_bytes(SAMPLES[0].read_bytes())
    session = load_session(path).session
    session.messages.append(Message("user", "one more", provenance=Provenance("user", True), id=session.new_id()))
    told = []
    writer = SessionWriter()
    writer.on_converted = lambda file, backup: told.append(backup)
    writer.save(snapshot(session), path, [])
    assert writer.close(30) is None
    assert told and told[0].read_bytes() == SAMPLES[0].read_bytes()
    assert load_session(path).session.messages[-1].content == "one more"


def test_export_json_is_the_readable_json_and_import_reads_it(tmp_path):
    path = tmp_path / "s.ctxpane.json"
    path.write_bytes(SAMPLES[0].read_bytes())
    convert_session(path)
    exported = tmp_path / "e.json"
    run = subprocess.run([sys.executable, "-m", "tui", "export", str(path), "--format", "json", "-o", str(exported)],
                         capture_output=True, text=True, cwd=str(ROOT), timeout=60)
    assert run.returncode == 0, run.stderr
    data = json.loads(exported.read_text())
    assert data["version"] == 1 and data["requests"][0]["body"] == load_session(path).session.requests[0].body
    target = tmp_path / "imported.ctxpane.json"
    run = subprocess.run([sys.executable, "-m", "tui", "import", str(exported), "-o", str(target)],
                         capture_output=True, text=True, cwd=str(ROOT), timeout=60)
    assert run.returncode == 0, run.stderr
    assert load_session(target).session.to_dict() == load_session(path).session.to_dict()


def test_a_key_in_a_body_is_never_written_and_the_rest_stays_exact(tmp_path):
    path = tmp_path / "s.ctxpane.json"
    session = Session(title="keys")
    session.messages.append(Message("user", "hi", provenance=Provenance("user", True), id=session.new_id()))
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "api_key": "sk-live-0123456789abcdef"}
    record = RequestRecord(1, "t", body, message_ids=["m0"], message_count=1)
    record.set_exact_text(json.dumps(body))
    session.requests.append(record)
    SessionAppender().append(session, path, ["sk-live-0123456789abcdef"])
    assert b"sk-live" not in path.read_bytes()
    assert load_session(path).session.requests[0].body["messages"] == body["messages"]


@pytest.mark.parametrize("damage", [
    lambda lines: lines[:1] + [b'{"t":"r","n":3,"d":{}}'],  # a request that does not follow
    lambda lines: [line.replace(b'"v":{"role"', b'"v":{"role":"user","role"', 1) for line in lines],  # key twice
    lambda lines: lines + [b'{"t":"st","m":{"k":0,"a":["' + b"0" * 32 + b'"]}}'],  # a message never written
    lambda lines: [lines[0]] + [b'{"t":"zz"}'],  # an unknown line
    lambda lines: lines + [b'{"t":"st","d":{"s":{"policy":{"name":"keep-all","context_window":"big"}}}}'],
])
def test_a_damaged_file_is_one_line_naming_it(tmp_path, damage):
    path = tmp_path / "s.ctxpane.json"
    session = Session(title="damaged")
    grow(session, SessionAppender(), path, FORMATS["chat completions"], 2)
    lines = path.read_bytes().split(b"\n")[:-1]
    path.write_bytes(b"\n".join(damage(lines)) + b"\n")
    with pytest.raises(SessionFileError) as caught:
        opened = load_session(path)
        for record in opened.session.requests:
            record.body  # noqa: B018 - a part is checked when its body is read
    assert str(caught.value).startswith(str(path)) and "\n" not in str(caught.value)


def test_the_tap_lets_go_of_what_its_file_holds(tmp_path):
    """A conversation's settled requests keep their figures in memory, not their bodies (read again from the file)."""
    from tui.sessions.log_writer import LogWriter
    from tui.sessions.log_session import file_loaders

    path = tmp_path / "tap.ctxpane.json"
    session = Session(title="tap")
    writer = LogWriter(path)
    grow(session, SessionAppender(), path, FORMATS["chat completions"], 0)
    for step in range(12):
        session.messages.append(Message("user", f"q{step}", id=session.new_id()))
        body = {"model": "m", "messages": [m.to_wire() for m in session.messages]}
        session.requests.append(RequestRecord(step + 1, "t", body, reply={"content": "ok"},
                                              message_ids=[m.id for m in session.messages]))
        writer.append(session)
    for index in range(writer.settled):
        session.requests[index].let_go_of_body(*file_loaders(path, index))
    assert writer.settled >= 8 and not session.requests[0].body_loaded
    assert session.requests[0].body == {"model": "m", "messages": [{"role": "user", "content": "q0"}]}


def test_splitting_keeps_a_body_that_is_not_an_object_whole():
    for text in ("[1,2]", "{}", '{"messages":[1, 2,3]}', '{"a":1} x', "not json"):
        cut = split(text)
        assert join(cut.pieces, [hole_text(h) for h in cut.holes]) == text


def test_growth_is_written_as_what_is_new(tmp_path):
    path = tmp_path / "s.ctxpane.json"
    session = Session(title="growth")
    appender = SessionAppender()
    grow(session, appender, path, FORMATS["chat completions"], 30)
    sizes = []
    for _ in range(3):
        before = path.stat().st_size
        grow(session, appender, path, FORMATS["chat completions"], 1)
        sizes.append(path.stat().st_size - before)
    # a request and its reply: the two new messages, a frame, the figures; not the conversation again
    assert max(sizes) < 2500, sizes
    state = read_log(path.read_bytes())
    assert len(state.records) == 33 and os.path.getsize(path) == state.complete


def test_the_apps_writer_appends_and_its_snapshot_copies_only_what_may_still_change(tmp_path):
    from tui.controller.saver import RECENT, SessionWriter, snapshot

    path = tmp_path / "app.ctxpane.json"
    session = Session(title="writer")
    grow(session, SessionAppender(), tmp_path / "other.ctxpane.json", FORMATS["chat completions"], 8)
    writer = SessionWriter()
    writer.save(snapshot(session), path, [])
    assert writer.wait_idle(30)
    first = path.read_bytes()
    session.messages.append(Message("user", "and one more", provenance=Provenance("user", True), id=session.new_id()))
    copy = snapshot(session)
    assert copy.messages is not session.messages and copy.messages[0] is session.messages[0]  # shared, not copied
    assert all(a is b for a, b in zip(copy.requests[:-RECENT], session.requests[:-RECENT]))  # settled: shared
    assert all(a is not b for a, b in zip(copy.requests[-RECENT:], session.requests[-RECENT:]))
    writer.save(copy, path, [])
    assert writer.close(30) is None
    grown = path.read_bytes()
    assert grown.startswith(first) and len(grown) - len(first) < 500  # the new message, appended
    assert load_session(path).session.messages[-1].content == "and one more"
