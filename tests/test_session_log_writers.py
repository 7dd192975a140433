"""A session file of version 2 that another program writes to, replaces or puts something else in place of while
it is being appended to (issue 22): what the file holds is never cut off or padded, the writer says so in one line
and never hangs, and the next append goes on from what the file holds."""

from __future__ import annotations

import os
import threading

import pytest

from test_session_log import FORMATS, grow
from tui.context.messages import Message, Provenance
from tui.sessions.model import Session
from tui.sessions.store import SessionAppender, SessionFileError, load_session
from tap_helpers import upstream  # noqa: F401 - a fixture
from waiting import until


def _say(session: Session, text: str) -> None:
    session.messages.append(Message("user", text, provenance=Provenance("user", True), id=session.new_id()))


def _contents(path) -> list[str]:
    return [str(m.content) for m in load_session(path).session.messages]


def test_another_writers_lines_are_never_cut_off_and_the_writer_is_told_in_one_line(tmp_path):
    path = tmp_path / "two.ctxpane.json"
    mine = Session(title="two")
    first = SessionAppender()
    grow(mine, first, path, FORMATS["chat completions"], 2)
    theirs = load_session(path).session  # another ctxpane (a tap, an app) appends to the same file
    _say(theirs, "from the other writer")
    SessionAppender().append(theirs, path)
    held = path.read_bytes()
    _say(mine, "from the first writer")
    with pytest.raises(SessionFileError) as told:
        first.append(mine, path)
    assert "appended to by another program" in str(told.value) and "\n" not in str(told.value)
    assert path.read_bytes() == held  # its lines kept, nothing of this append written after them
    assert "from the other writer" in _contents(path)
    first.append(mine, path)  # the next save reads the file again and goes on from it
    assert path.read_bytes().startswith(held) and b"\x00" not in path.read_bytes()
    assert _contents(path)[-1] == "from the first writer"


def _another_session(path) -> None:
    other = Session(title="another session")
    _say(other, "someone else's conversation")
    SessionAppender().append(other, path)


def _another_old_session(path) -> None:
    from tui.sessions.store import session_text

    other = Session(title="another session")
    _say(other, "someone else's conversation")
    path.write_text(session_text(other))  # version 1: one JSON object


REPLACEMENTS = {"another session": _another_session, "another session of version 1": _another_old_session,
                "not a session": lambda path: path.write_text("someone's notes\n")}


@pytest.mark.parametrize("replacement", REPLACEMENTS)
def test_a_file_replaced_under_the_writer_is_never_written_over(tmp_path, replacement):
    path = tmp_path / "s.ctxpane.json"
    mine = Session(title="mine")
    appender = SessionAppender()
    grow(mine, appender, path, FORMATS["chat completions"], 2)
    REPLACEMENTS[replacement](tmp_path / "other.ctxpane.json")
    os.replace(tmp_path / "other.ctxpane.json", path)  # (cp, a sync tool, a restore)
    held = path.read_bytes()
    for attempt in range(2):  # refused as it is, then refused again once read: not this session's file
        _say(mine, f"more {attempt}")
        with pytest.raises(SessionFileError) as told:
            appender.append(mine, path)
        assert "\n" not in str(told.value)
        assert path.read_bytes() == held
        assert sorted(p.name for p in tmp_path.iterdir()) == ["s.ctxpane.json"]  # (no backup: nothing converted)


def test_a_file_cut_shorter_by_another_program_is_not_padded_with_zeros(tmp_path):
    path = tmp_path / "s.ctxpane.json"
    mine = Session(title="mine")
    appender = SessionAppender()
    grow(mine, appender, path, FORMATS["chat completions"], 2)
    whole = path.read_bytes()
    path.write_bytes(whole[:whole.index(b"\n") + 1])  # (an editor saving the file shorter, in place)
    _say(mine, "after")
    with pytest.raises(SessionFileError, match="cut shorter"):
        appender.append(mine, path)
    assert b"\x00" not in path.read_bytes()
    appender.append(mine, path)  # read again: what the file lacks is written again
    assert _contents(path) == [str(m.content) for m in mine.messages]


def test_a_fifo_put_in_place_of_the_file_is_refused_without_waiting(tmp_path):
    path = tmp_path / "s.ctxpane.json"
    mine = Session(title="mine")
    appender = SessionAppender()
    grow(mine, appender, path, FORMATS["chat completions"], 1)
    path.unlink()
    os.mkfifo(path)
    _say(mine, "after")
    outcome: list[BaseException | None] = []

    def append() -> None:
        try:
            appender.append(mine, path)
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 - what the test looks at
            outcome.append(exc)
    worker = threading.Thread(target=append, daemon=True)
    worker.start()
    try:
        until(lambda: outcome, timeout=20, what="the append to give up on the FIFO")
    finally:
        if not outcome:  # let the writer go (it waits for a reader of the FIFO)
            reader = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            worker.join(20)
            os.close(reader)
    assert isinstance(outcome[0], (SessionFileError, OSError))


def _ask(tap, text: str) -> None:
    import httpx

    answer = httpx.post(f"{tap.url}/ok/v1/chat/completions", timeout=30, json={
        "model": "loop-model", "stream": True, "messages": [{"role": "user", "content": text}]})
    assert answer.status_code == 200


def test_the_tap_holds_each_file_it_writes_and_two_taps_never_share_one(upstream, tmp_path):  # noqa: F811
    from tap_helpers import RunningTap
    from tui.sessions.store import SessionLock, SessionLocked

    first, second = RunningTap(upstream.url, tmp_path), RunningTap(upstream.url, tmp_path)
    second.recorder.prefix = first.recorder.prefix  # two taps started in the same second, saving to one folder
    try:
        _ask(first, "the first tap's conversation")
        first.settle()
        _ask(second, "the second tap's conversation")
        second.settle()
        files = sorted(tmp_path.glob("*.ctxpane.json"))
        assert len(files) == 2, files
        said = sorted(str(m.content) for path in files for m in load_session(path).session.messages
                      if m.role == "user")
        assert said == ["the first tap's conversation", "the second tap's conversation"]
        with pytest.raises(SessionLocked):  # an app opening a file the tap still writes opens it read-only
            SessionLock(files[0]).acquire()
    finally:
        first.stop()
        second.stop()
    lock = SessionLock(files[0])
    lock.acquire()  # let go when the tap ends
    lock.release()


class _Runtime:
    def later(self, delay, callback):
        return threading.Timer(delay, callback)

    def soon(self, callback, *args):
        callback(*args)


def test_a_session_opened_through_a_symbolic_link_is_saved_to_the_file_it_points_to(tmp_path):
    from tui.controller.session_file import SessionFile
    from tui.sessions.store import SessionLock, SessionLocked

    real = tmp_path / "kept" / "real.ctxpane.json"
    real.parent.mkdir()
    mine = Session(title="linked")
    grow(mine, SessionAppender(), real, FORMATS["chat completions"], 1)
    link = tmp_path / "link.ctxpane.json"
    link.symlink_to(real)
    told: list[str] = []
    session = load_session(link).session
    file = SessionFile(lambda: session, _Runtime(), lambda text, **_: told.append(text), lambda: None, "NO_KEY_HERE")
    file.open(link, read_only=False)
    with pytest.raises(SessionLocked):  # the lock is the file's own: another link to it is the same session
        SessionLock(real).acquire()
    _say(session, "saved through the link")
    file.save()
    file.close(streaming=False)
    assert file.save_failure is None and told == []
    assert link.is_symlink() and _contents(real)[-1] == "saved through the link"


def test_a_body_a_forged_file_cannot_rebuild_is_one_line_naming_the_file_in_replay_and_export(tmp_path, run_cli):
    import json
    import re

    path = tmp_path / "forged.ctxpane.json"
    grow(Session(title="forged"), SessionAppender(), path, FORMATS["chat completions"], 3)
    lines = path.read_text().splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith('{"t":"r"') and '"b":' in line)
    body = json.loads(lines[first])["b"]
    tools = next(hole["x"] for hole in body["h"] if hole["key"] == "tools")
    message = next(hole["a"][0] for hole in body["h"] if hole["key"] == "messages")
    lines[first] = lines[first].replace(tools, message)  # both parts are in the file: it opens, its bodies do not
    path.write_text("\n".join(lines) + "\n")
    assert len(load_session(path).session.requests) == 3
    for command in (["replay", "--check"], ["export", "--format", "json"], ["export", "--format", "curl", "--step", "1"]):
        done = run_cli(*command, str(path))
        errors = done.stderr.strip().splitlines()
        assert done.returncode == 2 and len(errors) == 1, (command, done.stderr[-600:])
        assert errors[0].startswith(f"ctxpane: error: {path}") and re.search(r"tools", errors[0])


def test_each_edit_appends_its_own_branch_not_every_branch_again(tmp_path):
    from tui.sessions.model import Branch

    path = tmp_path / "edits.ctxpane.json"
    session = Session(title="edited often")

    def turn(text: str, index: int) -> Message:
        role = "user" if index % 2 == 0 else "assistant"
        return Message(role, f"{text} {index} " + "w" * 200, provenance=Provenance(
            "user" if role == "user" else "model", True), id=session.new_id())
    session.messages = [turn("message", i) for i in range(20)]
    appender = SessionAppender(sync=False)
    appender.append(session, path)
    grown = []
    for edit in range(60):  # the second message edited again and again: the continuation before is kept
        session.branches.append(Branch(session.messages[1].id, tuple(session.messages[2:]), f"before edit #{edit}"))
        session.messages = session.messages[:2] + [turn(f"edit {edit}", i) for i in range(18)]
        before = path.stat().st_size
        appender.append(session, path)
        grown.append(path.stat().st_size - before)
    assert grown[-1] < 1.5 * grown[0], (grown[0], grown[-1])  # (each branch written again: 60x the first)
    opened = load_session(path).session
    assert [(b.label, [m.id for m in b.messages]) for b in opened.branches] == \
        [(b.label, [m.id for m in b.messages]) for b in session.branches]
    assert [m.content for m in opened.messages] == [m.content for m in session.messages]


def test_a_file_whose_first_line_names_no_session_is_appended_to_once_opened(tmp_path):
    import json

    path = tmp_path / "made by hand.ctxpane.json"
    grow(Session(title="by hand"), SessionAppender(), path, FORMATS["chat completions"], 1)
    lines = path.read_text().splitlines(keepends=True)
    header = json.loads(lines[0])
    del header["id"]
    path.write_text(json.dumps(header, separators=(",", ":")) + "\n" + "".join(lines[1:]))
    session = load_session(path).session
    _say(session, "added")
    SessionAppender().append(session, path)
    assert _contents(path)[-1] == "added"


def test_a_tap_write_that_failed_is_written_when_the_tap_ends(upstream, tmp_path, monkeypatch):  # noqa: F811
    import errno

    from tap_helpers import RunningTap
    from tui.sessions.log_writer import LogWriter

    real, full = LogWriter._write, [True]

    def while_full(self, data):
        if full[0]:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(self, data)
    monkeypatch.setattr(LogWriter, "_write", while_full)
    tap = RunningTap(upstream.url, tmp_path)
    try:
        _ask(tap, "written in the end")
        tap.settle()  # the disk was full for both of its writes (the request, its reply)
        assert tap.recorder.failures >= 1 and not list(tmp_path.glob("*.ctxpane.json"))
        full[0] = False  # space again: the tap's last save, as it ends, writes what is due
    finally:
        tap.stop()
    (path,) = tmp_path.glob("*.ctxpane.json")
    assert [m.content for m in load_session(path).session.messages if m.role == "user"] == ["written in the end"]


def test_an_append_that_failed_is_written_whole_by_the_same_writer_next_time(tmp_path, monkeypatch):
    import errno

    from tui.sessions.log_writer import LogWriter

    path = tmp_path / "s.ctxpane.json"
    session = Session(title="full disk")
    _say(session, "first")
    writer = LogWriter(path)  # the tap's: one writer for the whole run, kept after a failure
    writer.append(session)
    _say(session, "written when there is space again")
    real = os.write
    monkeypatch.setattr(os, "write", lambda fd, data: (_ for _ in ()).throw(OSError(errno.ENOSPC, "full")))
    with pytest.raises(OSError):
        writer.append(session)
    monkeypatch.setattr(os, "write", real)
    writer.append(session)
    assert _contents(path) == ["first", "written when there is space again"]


def test_convert_through_a_link_converts_the_file_and_never_under_an_app_that_has_it_open(tmp_path, run_cli):
    from test_session_log import SAMPLES
    from tui.sessions.store import SessionLock

    real = tmp_path / "kept" / "old.ctxpane.json"
    real.parent.mkdir()
    real.write_bytes(SAMPLES[0].read_bytes())
    link = tmp_path / "old.ctxpane.json"
    link.symlink_to(real)
    app = SessionLock(real)  # the app opened it (through the link or not: its lock is beside the file)
    app.acquire()
    try:
        done = run_cli("convert", str(link))
        assert done.returncode == 2 and "is open in another ctxpane" in done.stderr
        assert link.is_symlink() and real.read_bytes() == SAMPLES[0].read_bytes()
    finally:
        app.release()
    done = run_cli("convert", str(link))
    assert done.returncode == 0, done.stderr
    assert link.is_symlink() and load_session(link).version == 2  # the file converted, the link still to it
    assert (real.parent / "old.ctxpane.json.v1.bak").read_bytes() == SAMPLES[0].read_bytes()


EDITOR = '''
import json, sys
sys.path.insert(0, sys.argv[3])
from pathlib import Path
from test_session_log import grow, FORMATS
from tui.context.messages import Message, Provenance
from tui.controller.saver import SessionWriter, snapshot
from tui.sessions.model import Branch, Session
from tui.sessions.store import SessionAppender
path, log = Path(sys.argv[1]), open(sys.argv[2], "a")
session = Session(title="edited while killed")
grow(session, SessionAppender(), path, FORMATS["chat completions"], 2)
writer, kept = SessionWriter(), []
for step in range(1, 100000):
    if step % 3 == 0:  # an edit of the second message
        session.messages[1] = Message("user", f"edit {step} " + "e" * 3000, provenance=Provenance("user", True),
                                      id=session.messages[1].id)
    elif step % 3 == 1:  # an undo that keeps what it took back as a branch
        session.branches.append(Branch(session.messages[1].id, tuple(session.messages[2:]), f"undo {step}"))
        kept, session.messages[2:] = session.messages[2:], []
    else:  # a redo, and a new message
        session.messages.extend(kept)
        session.messages.append(Message("user", f"more {step}", provenance=Provenance("user", True),
                                        id=session.new_id()))
    log.write(json.dumps(["handed", [m.content for m in session.messages], len(session.branches)]) + "\\n")
    log.flush()
    writer.save(snapshot(session), path, [])
    writer.wait_idle(60)
    log.write(json.dumps(["landed"]) + "\\n")
    log.flush()
'''


@pytest.mark.parametrize("after", [3, 30, 90])
def test_kill_9_during_edits_and_undos_keeps_every_append_that_landed(tmp_path, after):
    import json
    import signal
    import subprocess
    import sys

    from conftest import ROOT

    path, log, script = tmp_path / "e.ctxpane.json", tmp_path / "states.jsonl", tmp_path / "editor.py"
    script.write_text(EDITOR)
    child = subprocess.Popen([sys.executable, str(script), str(path), str(log), str(ROOT / "tests")], cwd=str(ROOT))
    try:
        until(lambda: log.exists() and log.read_text().count('["landed"]') >= after, timeout=120,
              what=f"{after} appends to land")
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(30)
    entries = [json.loads(line) for line in log.read_text().splitlines() if line.endswith("]")]
    handed = [entry for entry in entries if entry[0] == "handed"]
    landed = sum(1 for entry in entries if entry[0] == "landed")
    opened = load_session(path).session
    found = ([str(m.content) for m in opened.messages], len(opened.branches))
    possible = [tuple(entry[1:]) for entry in handed[landed - 1:landed + 1]]  # the last landed, or the one after it
    assert tuple(found) in [(list(m), b) for m, b in possible], (found[0][-2:], found[1], landed, len(handed))
