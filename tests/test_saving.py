"""Saving never blocks the event loop: a slow disk delays the file, never the keys; quitting flushes.

The writer is made slow by a write function that sleeps in the writer thread (a real slow
filesystem is hard to make in a test); the app must echo keys while it sleeps, and the file must
hold the last state once the app has quit.
"""

from __future__ import annotations

import threading
import time

from app_helpers import isolated, make_app, settle
from tui.app.chat.composer import Composer
from tui.controller.saver import IDLE_SECONDS, SessionWriter, snapshot
from tui.sessions import store
from tui.sessions.model import Session
from tui.context.messages import Message
from session_files import session_data
from waiting import eventually

SIZE = (150, 42)


def slow_writes(monkeypatch, seconds: float, log: list):
    original = store.SessionAppender.append

    def slow(self, session, path, secrets=None):
        assert threading.current_thread() is not threading.main_thread()  # never on the event loop
        log.append(("start", time.monotonic(), session.messages[0].text() if session.messages else ""))
        time.sleep(seconds)  # the slow disk itself: the time a write takes is what the tests are about
        original(self, session, path, secrets)
        log.append(("end", time.monotonic(), session.messages[0].text() if session.messages else ""))
    monkeypatch.setattr(store.SessionAppender, "append", slow)


async def test_keys_echo_while_a_slow_save_runs_and_quitting_keeps_the_last_state(monkeypatch, tmp_path):
    isolated(monkeypatch, tmp_path)
    log: list = []
    app = make_app(tmp_path, offline=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        slow_writes(monkeypatch, 3.0, log)
        app.wb.set_system_prompt("first")
        app.controller.changed()
        app.autosave(now=True)  # handed over at once: the loop goes on
        await pilot.press(*"typed")
        echoed = time.monotonic()
        assert app.query_one(Composer).text == "typed"
        for text in ("second", "third", "final"):  # more changes while the write sleeps: coalesced
            app.wb.set_system_prompt(text)
            app.controller.changed()
            app.autosave(now=True)
        await eventually(lambda: log, 10, "the first slow write to start", pilot=pilot)
        assert not any(kind == "end" for kind, _t, _text in log) and log and log[0][1] < echoed
        app.wb.set_system_prompt("after the last save")  # only a pending timer: quitting must write it
        app.controller.changed()
        path = app.session_file
    ends = [entry for entry in log if entry[0] == "end"]
    assert ends[0][1] > echoed  # the key was echoed before the first slow write had finished
    assert len(ends) < 5  # five states handed over, fewer writes: the waiting ones coalesced
    saved = session_data(path)
    assert saved["messages"][0]["content"] == "after the last save" and app.save_failure is None


async def test_a_failed_save_is_told_and_quitting_reports_it(monkeypatch, tmp_path):
    isolated(monkeypatch, tmp_path)

    def failing(self, session, path, secrets=None):
        raise OSError(28, "No space left on device")
    app = make_app(tmp_path, offline=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        monkeypatch.setattr(store.SessionAppender, "append", failing)
        app.wb.set_system_prompt("lost?")
        app.controller.changed()
        app.autosave(now=True)
        await settle(pilot, app)
        shown = [n.message for n in app._notifications]
        assert any("could not save the session" in m and "No space left" in m for m in shown)
    assert app.save_failure and "No space left on device" in app.save_failure


def test_the_writer_keeps_order_and_coalesces(monkeypatch, tmp_path):
    log: list = []
    slow_writes(monkeypatch, 0.2, log)
    writer = SessionWriter()
    path = tmp_path / "s.ctxpane.json"
    session = Session(messages=[Message("user", "v0")])
    for number in range(10):
        session.messages[0] = Message("user", f"v{number}")  # (messages are replaced, never changed in place)
        writer.save(snapshot(session), path, [])  # the live session goes on changing: the snapshot does not
    assert writer.close(10) is None
    written = [text for kind, _t, text in log if kind == "end"]
    assert written[-1] == "v9" and len(written) <= 2 and written == sorted(written)
    assert session_data(path)["messages"][0]["content"] == "v9"


def test_quitting_waits_a_bounded_time_and_says_so(monkeypatch, tmp_path):
    log: list = []
    slow_writes(monkeypatch, 1.0, log)
    writer = SessionWriter()
    path = tmp_path / "s.ctxpane.json"
    writer.save(Session(messages=[Message("user", "late")]), path, [])
    started = time.monotonic()
    failure = writer.close(0.2)
    assert time.monotonic() - started < 0.9
    assert failure is not None and "did not answer within" in str(failure)
    writer._thread.join(5)  # the write itself still lands: the thread is not a daemon
    assert session_data(path)["messages"][0]["content"] == "late"


def test_a_writer_nobody_closed_lets_the_process_end(tmp_path):
    """Its thread ends once idle (a test that failed before close() must not keep pytest from exiting)."""
    writer = SessionWriter()
    path = tmp_path / "s.ctxpane.json"
    session = Session(messages=[Message("user", "first")])
    writer.save(session, path, [])
    assert writer.wait_idle(10)
    first = writer._thread
    first.join(IDLE_SECONDS + 5)
    assert not first.is_alive()
    session.messages[0] = Message("user", "second", id=session.messages[0].id)
    writer.save(session, path, [])  # the next save starts another
    assert writer.wait_idle(10) and writer._thread is not first
    assert session_data(path)["messages"][0]["content"] == "second"
    assert writer.close(10) is None
