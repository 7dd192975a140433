"""The unsent draft is kept with its session (issue 41, item 4): written on quit and on switching sessions,
restored into the composer when the session is opened again, never holding a key; undo history is not kept,
and the notice after a restart says so."""

from __future__ import annotations

from pathlib import Path

from controller_helpers import Harness, conversation
from tui.controller.events import Notice, SessionChanged
from tui.sessions.model import Session
from tui.sessions.store import load_session, save_session

LONG_DRAFT = "A long message, typed and not sent:\n" + "every word of it counts. " * 40
KEY = "sk-proj-Zq8Rw2Lk5Tn9Vb3Xc7Mp1Hd4Fg6Js0Ay"


def a_session_file(tmp_path: Path) -> Path:
    """A session file as an older ctxpane wrote it (no draft in it)."""
    path = tmp_path / "kept.ctxpane.json"
    save_session(conversation(), path)
    return path


async def opened(tmp_path: Path, path: Path) -> Harness:
    """A new controller (a restart) with the session file opened."""
    made = Harness(tmp_path)
    await made.ctl.open_first(path, offline=True)
    await made.idle()
    return made


async def quit_with_draft(tmp_path: Path, path: Path, draft: str) -> None:
    made = await opened(tmp_path, path)
    made.ctl.set_draft(draft)
    made.ctl.close()


def composer_told(made: Harness) -> str | None:
    """What the last session change asked the composer to hold (None: keep what it holds, empty at start-up)."""
    return made.of(SessionChanged)[-1].draft


async def test_a_draft_left_at_quit_is_back_when_the_session_opens_again(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    path = a_session_file(tmp_path)
    await quit_with_draft(tmp_path, path, LONG_DRAFT)
    assert load_session(path).session.draft == LONG_DRAFT
    again = await opened(tmp_path, path)
    assert again.ctl.wb.draft == LONG_DRAFT, "the pane's draft is the text restored"
    assert composer_told(again) == LONG_DRAFT
    again.ctl.close()


async def test_an_emptied_draft_clears_the_one_saved_before(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    path = a_session_file(tmp_path)
    await quit_with_draft(tmp_path, path, "first thoughts")
    await quit_with_draft(tmp_path, path, "")  # appended after: the later state wins
    assert load_session(path).session.draft == ""
    again = await opened(tmp_path, path)
    assert again.ctl.wb.draft == "" and composer_told(again) in (None, "")
    again.ctl.close()


async def test_a_key_in_the_draft_never_reaches_the_file(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    path = a_session_file(tmp_path)
    await quit_with_draft(tmp_path, path, f"my key is {KEY} — why is it refused?")
    assert KEY.encode() not in path.read_bytes()
    assert KEY[:20].encode() not in path.read_bytes(), "no start of the key either"
    assert "why is it refused?" in load_session(path).session.draft


async def test_an_old_file_without_a_draft_opens_with_an_empty_composer(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    path = a_session_file(tmp_path)
    assert b"draft" not in path.read_bytes()
    made = await opened(tmp_path, path)
    assert made.ctl.wb.session.messages[-1].text() == "And the price?"
    assert made.ctl.wb.draft == "" and composer_told(made) in (None, "")
    made.ctl.close()


async def test_switching_sessions_keeps_each_ones_draft(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    first = a_session_file(tmp_path)
    second = tmp_path / "second.ctxpane.json"
    save_session(conversation(), second)
    made = await opened(tmp_path, first)
    made.ctl.set_draft("for the first one")
    made.ctl.open_file(second)
    await made.idle()
    assert made.ctl.file.session_file == second
    assert composer_told(made) == "", "the second session's own (empty) draft, not the first one's"
    assert load_session(first).session.draft == "for the first one"
    made.ctl.open_file(first)
    await made.idle()
    assert made.ctl.wb.draft == "for the first one" and composer_told(made) == "for the first one"
    made.ctl.close()


async def test_a_draft_typed_in_a_new_session_is_not_lost_at_quit(tmp_path, monkeypatch):
    """A session with no message yet has no file: a draft typed in it makes one."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    made = Harness(tmp_path)
    made.ctl.adopt(Session(), None)
    await made.idle()
    assert not made.ctl.wb.session.messages and made.ctl.file.session_file is None
    made.ctl.set_draft(LONG_DRAFT)
    made.ctl.close()
    path = made.ctl.file.session_file
    assert path is not None and load_session(path).session.draft == LONG_DRAFT


async def test_undo_after_a_restart_says_why_there_is_nothing_to_undo(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    path = a_session_file(tmp_path)
    made = await opened(tmp_path, path)
    made.ctl.delete(1)
    made.ctl.close()
    again = await opened(tmp_path, path)
    assert not again.ctl.history.undo()
    said = again.of(Notice)[-1].text
    assert said.startswith("nothing to undo") and "not kept" in said, said
    again.ctl.close()
