"""One writer per session: a second ctxpane on a held session reads only, in deed. It sends nothing, renames
nothing, keeps what is typed, offers to continue in a new session of its own, and says on quit that it saved
nothing; a rename from another app's session browser never writes over what the holder saved."""

from __future__ import annotations

import os

import pytest

from app_helpers import isolated, make_app, settle
from controller_helpers import Harness, conversation
from fault_server import FaultServer
from tui.context.messages import Message, Provenance
from tui.controller.events import Notice
from tui.sessions.store import SessionLocked, load_session

SIZE = (160, 48)


async def holder(tmp_path) -> tuple[Harness, object]:
    """App A: a session with one exchange, saved, its file locked."""
    made = Harness(tmp_path)
    await made.ready(conversation())
    made.ctl.file.autosave(now=True)
    await made.idle()
    path = made.ctl.file.session_file
    assert path is not None and made.ctl.file.lock is not None and not made.ctl.read_only
    return made, path


async def exchange(made: Harness, n: int) -> None:
    """A's next exchange, kept as a send keeps one (without a server)."""
    session = made.ctl.wb.session
    session.messages += [Message("user", f"question {n}", id=f"q{n}"),
                         Message("assistant", f"answer {n}", provenance=Provenance("model", True), id=f"a{n}")]
    made.ctl.changed()
    made.ctl.file.autosave(now=True)
    await made.idle()


def texts(path) -> list[str]:
    return [message.text() for message in load_session(path).session.messages]


async def second(tmp_path, path, url: str = "") -> Harness:
    """App B, opened on the file A holds."""
    made = Harness(tmp_path, base_url=url) if url else Harness(tmp_path)
    await made.ready(load_session(path).session, path)
    if url:
        made.ctl.connect()
        await made.idle()
    return made


def notices(made: Harness) -> str:
    return "\n".join(event.text for event in made.of(Notice))


async def test_a_rename_while_another_holds_the_file_is_refused_naming_it_and_changes_nothing(tmp_path):
    from tui.sessions.store import retitle_session
    a, path = await holder(tmp_path)
    await exchange(a, 1)
    with pytest.raises(SessionLocked, match=r"pid \d+") as refused:
        retitle_session(path, "renamed elsewhere")
    assert refused.value.holder.isdigit()
    await exchange(a, 2)
    a.ctl.close()
    assert a.ctl.closing_line() == f"session saved in {path}"
    retitle_session(path, "renamed once free")  # under its lock, read again: only the title changes
    again = load_session(path).session
    assert again.title == "renamed once free" and texts(path)[-2:] == ["question 2", "answer 2"]


async def test_a_second_app_opened_on_a_held_session_reads_only_says_who_holds_it_and_renames_nothing(tmp_path):
    a, path = await holder(tmp_path)
    b = await second(tmp_path, path)
    assert b.ctl.read_only and b.ctl.snapshot().read_only
    assert not b.ctl.rename_session("B's title")
    assert "held by another ctxpane (pid" in notices(b) and "not renamed" in notices(b)
    await exchange(a, 1)
    b.ctl.close()
    assert b.ctl.closing_line() == (f"read-only: nothing saved; the session was held by another ctxpane "
                                    f"(pid {b.ctl.file.held_by}) when it was opened here")
    assert b.ctl.file.held_by == str(os.getpid())
    a.ctl.close()
    assert load_session(path).session.title == "three turns" and texts(path)[-1] == "answer 1"


async def test_a_read_only_app_refuses_to_send_at_the_controller_and_keeps_the_draft(tmp_path):
    a, path = await holder(tmp_path)
    with FaultServer(delay=0.01) as server:
        b = await second(tmp_path, path, server.url + "/plain")
        assert b.ctl.client is not None
        b.ctl.set_draft("words typed in B")
        assert not b.ctl.submit("words typed in B")
        await b.idle()
        assert not [r for r in server.requests if r["path"].endswith("/chat/completions")]
        assert b.ctl.wb.draft == "words typed in B" and not b.ctl.streaming
        assert "not sent" in notices(b) and "Continue in a new session" in notices(b)
        assert "kept nowhere once this app quits" in b.ctl.quit_would_lose()
        b.ctl.close()
        assert b.ctl.closing_line().endswith("the 16 characters left unsent in the composer were not kept")
    a.ctl.close()
    assert "words typed in B" not in texts(path)


async def test_continuing_in_a_new_session_keeps_the_history_and_the_draft_and_writes_its_own_file(tmp_path):
    a, path = await holder(tmp_path)
    await exchange(a, 1)
    with FaultServer(delay=0.01) as server:
        b = await second(tmp_path, path, server.url + "/plain")
        history = texts(path)
        b.ctl.set_draft("go on from here")
        assert b.ctl.continue_in_new_session()
        await b.idle()
        fork = b.ctl.file.session_file
        assert not b.ctl.read_only and fork is not None and fork != path and b.ctl.file.lock is not None
        assert b.ctl.wb.draft == "go on from here" and texts(fork) == history
        await b.send("go on from here")
        assert texts(fork)[-2:] == ["go on from here", "plain reply"]
        b.ctl.close()
        assert b.ctl.closing_line() == f"session saved in {fork}"
    await exchange(a, 2)
    a.ctl.close()
    assert texts(path) == history + ["question 2", "answer 2"]  # A's file: A's exchanges, none of B's


@pytest.fixture()
def sessions(monkeypatch, tmp_path):
    return isolated(monkeypatch, tmp_path)


async def test_a_rename_in_another_apps_session_browser_never_writes_over_the_holders_newest_exchange(
        sessions, tmp_path):
    """The dialog opens, the holder saves an exchange, the title is given: refused (the file is held), nothing
    written; before, the file read when the dialog opened was written back, the exchange gone."""
    a, path = await holder(tmp_path)
    app = make_app(tmp_path, offline=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        app.action_open_session()
        await settle(pilot, app)
        browser = app.screen
        browser.query_one("#browser-table").move_cursor(row=[p for p, _ in browser.rows].index(path))
        await pilot.press("n")
        await exchange(a, 1)  # while the dialog is open
        app.screen.query_one("#editor").text = "renamed in B's browser"
        await pilot.press("ctrl+s")
        await settle(pilot, app)
        shown = [str(n.message) for n in app._notifications]
        assert any("not renamed" in text and "pid" in text for text in shown), shown
    assert texts(path)[-2:] == ["question 1", "answer 1"]
    assert load_session(path).session.title == "three turns"
    a.ctl.close()


async def test_a_file_renamed_while_its_app_had_let_it_go_is_read_again_when_the_app_takes_it_back(tmp_path):
    """The app's writer remembered the file as it left it; a rename appended a line since. Taken back under the
    lock, the file is read again: the next exchange lands after the rename, with no failed save."""
    from tui.sessions.store import retitle_session
    from tui.controller.events import Severity
    a, path = await holder(tmp_path)
    a.ctl.new_session()  # the first file let go (its lock released once its writes landed)
    await a.idle()
    retitle_session(path, "renamed while let go")
    a.ctl.open_file(path)
    await a.idle()
    assert a.ctl.file.session_file == path and a.ctl.file.lock is not None
    await exchange(a, 1)
    a.ctl.close()
    assert not [e for e in a.of(Notice) if e.severity is Severity.ERROR], notices(a)
    assert load_session(path).session.title == "renamed while let go" and texts(path)[-1] == "answer 1"


async def test_an_export_over_a_held_session_file_is_refused_naming_the_holder(tmp_path):
    from tui.commands import export
    from tui.errors import UsageError
    a, path = await holder(tmp_path)
    await exchange(a, 1)
    before = path.read_bytes()
    with pytest.raises(UsageError, match=r"not written: .* is open in another ctxpane \(pid \d+\)"):
        export.run([str(path), "--format", "json", "-o", str(path)])
    assert path.read_bytes() == before
    await exchange(a, 2)
    a.ctl.close()
    assert texts(path)[-1] == "answer 2"
    assert export.run([str(path), "--format", "json", "-o", str(path)]) == 0  # let go: the user's to overwrite
    assert texts(path)[-1] == "answer 2"


async def test_a_change_in_a_read_only_app_is_said_unsaved_once_warned_of_at_quit_and_kept_by_a_fork(tmp_path):
    a, path = await holder(tmp_path)
    before = path.read_bytes()
    b = await second(tmp_path, path)
    b.ctl.set_system_prompt("You are B.")
    b.ctl.set_system_prompt("You are B, again.")
    await b.idle()
    assert notices(b).count("not saved: read-only: the session is held by another ctxpane (pid") == 1
    assert path.read_bytes() == before
    assert "what you typed or changed is kept nowhere" in b.ctl.quit_would_lose()
    assert b.ctl.continue_in_new_session()
    await b.idle()
    assert b.ctl.quit_would_lose() == "" and not b.ctl.file.unsaved_here
    assert load_session(b.ctl.file.session_file).session.messages[0].text() == "You are B, again."
    b.ctl.close()
    a.ctl.close()
    assert path.read_bytes() == before
