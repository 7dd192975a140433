"""Session files: round trip, atomic saves, one writer, and every kind of bad file."""

import hashlib
import json
import os

import pytest

from conftest import ROOT
from tui.context.messages import Message
from tui.sessions import store
from tui.sessions.model import RequestRecord, Session, recover_interrupted_reply
from tui.sessions.store import SessionFileError, SessionLock, SessionLocked, load_session, save_session
from session_files import session_data
from waiting import until

SAMPLE = ROOT / "sample_sessions" / "forged-tool-result.ctxpane.json"


def digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_round_trip_keeps_everything(tmp_path):
    original = load_session(SAMPLE).session
    path = tmp_path / "copy.ctxpane.json"
    save_session(original, path)
    again = load_session(path).session
    assert again.to_dict() == original.to_dict()
    tool = again.messages[3]
    assert tool.provenance.source == "tool" and not tool.provenance.trusted and tool.provenance.label == "tool:web_fetch"
    assert again.requests[-1].body["messages"] and again.requests[-1].document_hash


def test_keys_never_saved_where_they_are_carried_and_words_kept(tmp_path):
    key = "sk-live-SECRET1234567890"
    session = Session(messages=[Message("user", f"my key is {key}")])  # the user's words: kept as written
    session.requests.append(RequestRecord(1, "t", {"api_key": "short", "messages": []},
                                          reply={"error": f"bad key {key}; Bearer abcdefghijklmnop1234"}))
    path = tmp_path / "s.ctxpane.json"
    save_session(session, path, secrets=[key])
    loaded = load_session(path).session
    assert loaded.messages[0].content == f"my key is {key}"
    assert loaded.requests[0].body["api_key"] == "***"
    assert loaded.requests[0].reply["error"] == "bad key ***; Bearer ***"


def test_atomic_save_leaves_old_file_when_the_write_fails(tmp_path, monkeypatch):
    path = tmp_path / "s.ctxpane.json"
    save_session(Session(title="first"), path)
    before = digest(path)

    def boom(*args):
        raise OSError("disk full")
    monkeypatch.setattr(store.os, "replace", boom)
    with pytest.raises(OSError):
        save_session(Session(title="second"), path)
    assert digest(path) == before
    assert [p.name for p in tmp_path.iterdir()] == ["s.ctxpane.json"]  # no temporary file left behind


def test_one_writer_at_a_time(tmp_path):
    path = tmp_path / "s.ctxpane.json"
    first, second = SessionLock(path), SessionLock(path)
    first.acquire()
    with pytest.raises(SessionLocked, match=f"pid {os.getpid()}"):
        second.acquire()
    first.release()
    second.acquire()
    second.release()


def test_interrupted_reply_is_restored():
    session = load_session(SAMPLE).session
    count = len(session.messages)
    session.requests.append(RequestRecord(3, "t", {"messages": []}, reply={"content": "half a rep", "incomplete": True},
                                          message_count=count))
    assert recover_interrupted_reply(session)
    assert session.messages[-1].text() == "half a rep" and session.messages[-1].incomplete
    assert not recover_interrupted_reply(session)  # once only


def bad_files(tmp_path):
    good = json.loads(SAMPLE.read_text())
    cases = {
        "truncated": (SAMPLE.read_text()[:500], "truncated"),
        "not-json": ("hello", "not valid JSON"),
        "wrong-format": (json.dumps({"format": "other", "version": 1}), "not a ctxpane session"),
        "no-version": (json.dumps({**good, "version": "1"}), "no valid 'version'"),
        "missing-messages": (json.dumps({k: v for k, v in good.items() if k != "messages"}), "field `messages`: required"),
        "wrong-type": (json.dumps({**good, "messages": {"role": "user"}}), "field `messages`: expected array"),
        "bad-role": (json.dumps({**good, "messages": [{"role": "wizard", "content": "x"}]}), "field `messages[0].role`: invalid enum value 'wizard'"),
        "bad-request": (json.dumps({**good, "requests": [{"number": "one"}]}), "field `requests[0].number`"),
        "binary": (b"\x00\x01\x02binary", "binary file"),
        "latin1": ("caf\xe9".encode("latin-1"), "not UTF-8"),
    }
    paths = {}
    for name, (content, needle) in cases.items():
        path = tmp_path / f"{name}.ctxpane.json"
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
        paths[name] = (path, needle)
    return paths


def test_each_bad_file_gives_a_clear_message_and_is_untouched(tmp_path):
    for name, (path, needle) in bad_files(tmp_path).items():
        before = digest(path)
        with pytest.raises(SessionFileError) as info:
            load_session(path)
        assert needle in str(info.value), name
        assert "\n" not in str(info.value)
        assert digest(path) == before


def test_directory_huge_and_missing(tmp_path, monkeypatch):
    with pytest.raises(SessionFileError, match="is a directory"):
        load_session(tmp_path)
    with pytest.raises(SessionFileError, match="no such file"):
        load_session(tmp_path / "nope.json")
    big = tmp_path / "big.ctxpane.json"
    big.write_text("x" * 2000)
    monkeypatch.setattr(store, "MAX_SESSION_BYTES", 1024)
    with pytest.raises(SessionFileError, match="over the"):
        load_session(big)


def test_newer_version_opens_read_only(tmp_path):
    data = json.loads(SAMPLE.read_text())
    path = tmp_path / "future.ctxpane.json"
    path.write_text(json.dumps({**data, "version": 99, "future_field": {"x": 1}}))
    opened = load_session(path)
    assert opened.read_only and "newer ctxpane" in opened.note and opened.session.messages


def test_unreadable_file_via_cli(run_cli, tmp_path):
    path = tmp_path / "locked.ctxpane.json"
    path.write_text(SAMPLE.read_text())
    path.chmod(0)
    result = run_cli("replay", str(path), "--check", without_root_reads=True)
    assert result.returncode == 2 and "permission denied" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_bad_files_via_cli_exit_2(run_cli, tmp_path):
    for name, (path, needle) in bad_files(tmp_path).items():
        result = run_cli("replay", str(path), "--check")
        assert result.returncode == 2 and needle in result.stderr, (name, result.stderr)
        assert "Traceback" not in result.stderr


LOCK_WORKER = """
import fcntl, pathlib, sys
sys.path.insert(0, "tests")  # (run from the repository's root)
from waiting import until
from tui.sessions import store
session, signals, role = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3]

def wait_for(name):
    until((signals / name).exists, 60, name, poll=0.01)

if role == "racer":  # open the lock file, then stop just before locking it until told to go on
    real_flock, calls = fcntl.flock, []
    def paused_flock(fd, operation):
        if not calls:
            calls.append(fd)
            (signals / "racer-opened").touch()
            wait_for("go")
        return real_flock(fd, operation)
    store.fcntl.flock = paused_flock
lock = store.SessionLock(session)
try:
    lock.acquire()
except store.SessionLocked:
    print("REFUSED", flush=True)
    sys.exit(0)
print("LOCKED", flush=True)
(signals / f"{role}-held").touch()
wait_for(f"{role}-release")
lock.release()
(signals / f"{role}-released").touch()
"""


def test_the_lock_never_admits_two_writers_across_processes(tmp_path):
    """A process that opened the lock file just before its holder let go must not share the lock with a third."""
    import subprocess
    import sys

    session, signals = tmp_path / "s.ctxpane.json", tmp_path / "signals"
    signals.mkdir()

    def start(role):
        return subprocess.Popen([sys.executable, "-c", LOCK_WORKER, str(session), str(signals), role],
                                stdout=subprocess.PIPE, text=True, cwd=str(ROOT))

    def wait_for(name):
        until((signals / name).exists, 30, name, poll=0.01)

    holder = start("holder")
    wait_for("holder-held")
    racer = start("racer")
    try:
        wait_for("racer-opened")  # the racer has the lock file open and is about to lock it
        (signals / "holder-release").touch()
        wait_for("holder-released")
        (signals / "go").touch()
        assert racer.stdout.readline().strip() == "LOCKED"
        (signals / "third-release").touch()  # should the third get in, it lets go at once
        third = subprocess.run([sys.executable, "-c", LOCK_WORKER, str(session), str(signals), "third"],
                               capture_output=True, text=True, cwd=str(ROOT), timeout=30)
        assert third.stdout.strip() == "REFUSED", "two processes hold the session lock at once"
    finally:
        (signals / "racer-release").touch()
        for process in (holder, racer):
            process.wait(timeout=30)
    assert holder.stdout.read().strip() == "LOCKED"


def test_a_builtin_template_keeps_the_defaults_it_was_used_with(tmp_path):
    """Plain ChatML (no default system turn: an assumed template) is saved as the built-in and its changed default;
    reopened, it renders as it did, so replay matches; a default named like the engine's own arguments is refused."""
    from tui.context.templates.library import plain_chatml
    from tui.controller.workbench import template_spec
    from tui.sessions.session_template import template_from_session
    from tui.sessions.store import save_session
    path = tmp_path / "plain.ctxpane.json"
    save_session(Session(title="plain", template=template_spec(plain_chatml()),
                         messages=[Message("user", "hi", id="u1")]), path)
    stored = session_data(path)["template"]
    assert stored == {"name": "chatml", "origin": "builtin", "defaults": {"default_system": ""}}
    again = template_from_session(load_session(path).session.template)
    assert again.render([{"role": "user", "content": "hi"}]) == plain_chatml().render([{"role": "user", "content": "hi"}])
    assert "You are Qwen" not in again.render([{"role": "user", "content": "hi"}])
    data = session_data(path)
    data["template"]["defaults"] = {"messages": "x"}
    path.write_text(json.dumps(data))
    with pytest.raises(SessionFileError, match="defaults"):
        load_session(path)
