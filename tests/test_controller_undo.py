"""Undo in the controller, on a plain asyncio loop (no Textual): every change that removes or replaces
messages is taken back, several steps deep, the file follows, and message ids are never given twice."""

from __future__ import annotations


from controller_helpers import Session, connected, harness, summarised_on_a_server  # noqa: F401 - harness is a fixture
from fault_server import FaultServer
from tui.controller.events import Notice
from tui.sessions.store import load_session
from session_files import session_data


def texts(ctl) -> list[str]:
    return [m.text() for m in ctl.wb.session.messages]


def saved(ctl) -> Session:
    return load_session(ctl.file.session_file).session


async def test_each_destructive_change_is_undone_several_steps_deep(harness):
    ctl = await harness.ready()
    original = list(ctl.wb.session.messages)
    ctl.edit(3, "And the price now?")  # the last message: edited in place
    ctl.toggle_pin(2)
    ctl.delete(1)
    ctl.set_system_prompt("You are kind.")
    assert ctl.history.next_label == "system prompt change"
    for label in ("system prompt change", "delete #1", "pin #2", "edit #3"):
        assert ctl.history.next_label == label
        assert ctl.history.undo()
        assert harness.of(Notice)[-1].text == f"undone: {label}"
    assert ctl.wb.session.messages == original
    assert not ctl.history.undo() and harness.of(Notice)[-1].text == "nothing to undo"


async def test_undo_is_saved_like_any_change(harness):
    ctl = await harness.ready()
    ctl.delete(1)
    await harness.idle()  # saves are written SAVE_DELAY after the last change
    assert "What is the quota?" not in [m.text() for m in saved(ctl).messages]
    ctl.history.undo()
    await harness.idle()
    assert [m.text() for m in saved(ctl).messages] == texts(ctl)
    assert "What is the quota?" in texts(ctl)


async def test_ids_given_after_a_delete_are_never_given_again_after_its_undo(harness):
    ctl = await harness.ready()
    ctl.delete(3)
    added = ctl.wb.add_document("notes", "notes.txt")
    ctl.history.undo()  # the deleted message is back; the document added after it stays
    assert added.id in [m.id for m in ctl.wb.session.messages]
    again = ctl.wb.add_document("more notes", "more.txt")
    ids = [m.id for m in ctl.wb.session.messages]
    assert len(ids) == len(set(ids)) and again.id != added.id
    ctl.changed()
    await harness.idle()
    file_ids = [m["id"] for m in session_data(ctl.file.session_file)["messages"]]
    assert len(file_ids) == len(set(file_ids))


async def test_a_new_session_starts_with_nothing_to_undo(harness):
    ctl = await harness.ready()
    ctl.delete(1)
    ctl.new_session()
    await harness.idle()
    assert ctl.history.next_label is None and not ctl.history.undo()


async def test_resend_is_undone_and_the_dropped_messages_come_back(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FaultServer(delay=0.01) as server:
        made = await connected(tmp_path, server.url + "/ok")
        ctl = made.ctl
        before = texts(ctl)
        ctl.resend_from(2)
        assert not ctl.history.undo()  # not while the reply arrives
        await made.idle()
        assert len(ctl.wb.session.messages) == 3
        assert ctl.history.next_label == "re-send from #1" and ctl.history.undo()
        assert texts(ctl) == before
        await made.idle()
        assert [m.text() for m in saved(ctl).messages] == before
        ctl.close()


async def test_a_summary_is_undone_without_losing_the_turn_sent_with_it(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    async with summarised_on_a_server(tmp_path) as (made, _server):
        ctl = made.ctl
        sent = texts(ctl)
        assert ctl.history.next_label.startswith("summary of ") and ctl.history.undo()
        assert ctl.wb.session.policy["summary"] is None and texts(ctl) == sent


async def test_a_stale_stopped_status_goes_with_the_next_reply(tmp_path, monkeypatch):
    from tui.controller.events import StatusChanged
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FaultServer(delay=0.01) as server:
        made = await connected(tmp_path, server.url + "/ok")
        ctl = made.ctl
        connected_line = made.of(StatusChanged)[-1].text
        assert ctl.submit("first")
        ctl.stop()  # before it was sent: "stopped" in the status line
        await made.idle()
        assert "stopped" in made.of(StatusChanged)[-1].text
        seen = len(made.of(StatusChanged))
        assert ctl.submit("second")
        await made.idle()
        assert ctl.wb.session.messages[-1].role == "assistant"
        # The connection line comes back when the reply starts; what the reply's receipt says may follow
        # (this server's usage is fixed, so it reads as a cut), but never the stale "stopped".
        after = [event.text for event in made.of(StatusChanged)[seen:]]
        assert connected_line in after and "stopped" not in after[-1], after
        ctl.close()
