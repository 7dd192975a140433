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


def test_a_file_cut_shorter_or_replaced_under_the_writer_is_never_padded_nor_written_over(tmp_path):
    path = tmp_path / "s.ctxpane.json"
    mine = Session(title="mine")
    appender = SessionAppender()
    grow(mine, appender, path, FORMATS["chat completions"], 2)
    other = Session(title="another session")
    _say(other, "someone else's conversation")
    SessionAppender().append(other, tmp_path / "other.ctxpane.json")
    os.replace(tmp_path / "other.ctxpane.json", path)  # (cp, a sync tool, a restore)
    held = path.read_bytes()
    for attempt in range(2):  # refused as it is, then refused again once read: another session's file
        _say(mine, f"more {attempt}")
        with pytest.raises(SessionFileError) as told:
            appender.append(mine, path)
        assert "\n" not in str(told.value)
        assert path.read_bytes() == held
    assert _contents(path) == ["someone else's conversation"]


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
