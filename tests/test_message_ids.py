"""Message ids are unique for the life of a session file: a delete never frees an id for reuse.

So a note about one reply never shows under a later message, and fence ids never repeat.
"""

from __future__ import annotations

import json

import pytest

from app_helpers import isolated, make_app, settle
from tui.app.chat.panel import ChatPanel
from tui.app.chat.transcript import ChatView
from tui.controller.workbench import Workbench
from tui.context.messages import Message, Provenance
from tui.context.templates.library import builtin_template
from tui.sessions.model import MAX_NEXT_ID, RequestRecord, Session, recover_interrupted_reply
from tui.sessions.parse import decode_session
from tui.sessions.store import SessionFileError, load_session, save_session, session_text
from session_files import session_data


def workbench(messages: int = 0) -> Workbench:
    wb = Workbench(Session(), builtin_template("chatml"))
    for number in range(messages):
        wb.commit_text(f"message {number}")
    return wb


def test_an_id_is_never_given_twice_even_after_deletes():
    wb = workbench(3)
    ever = {m.id for m in wb.session.messages}
    for _round in range(5):
        wb.delete(len(wb.session.messages) - 1)  # the newest goes: its id was the highest
        wb.commit_text("again")
        new = wb.session.messages[-1].id
        assert new not in ever
        ever.add(new)
    wb.delete(0)
    wb.set_system_prompt("be brief")
    wb.add_document("doc", "notes.txt")
    assert len({m.id for m in wb.session.messages}) == len(wb.session.messages)
    assert not {m.id for m in wb.session.messages[-2:]} & (ever - {m.id for m in wb.session.messages})


def test_the_counter_survives_save_and_load(tmp_path):
    wb = workbench(4)
    used = {m.id for m in wb.session.messages}
    del wb.session.messages[1:]
    path = tmp_path / "s.ctxpane.json"
    save_session(wb.session, path)
    assert session_data(path)["next_id"] == wb.session.next_id
    again = load_session(path).session
    assert again.next_id == wb.session.next_id and again.to_dict() == wb.session.to_dict()
    assert again.new_id() not in used


def test_old_files_without_the_counter_start_past_every_id_they_show(tmp_path):
    session = Session(messages=[Message("user", "a", id="m3"), Message("assistant", "b", id="m7")])
    session.requests.append(RequestRecord(1, "t", {"messages": []}, message_ids=["m0", "m12"],
                                          dropped=[{"message": 0, "message_id": "m15", "role": "user",
                                                    "tokens": 1, "policy": "drop-oldest", "reason": "r",
                                                    "since_request": 1}]))
    data = json.loads(session_text(session))
    del data["next_id"]
    loaded, _version = decode_session(json.dumps(data).encode())
    assert loaded.next_id == 16  # m15 was used by a message deleted since: never again
    assert loaded.new_id() == "m16"


@pytest.mark.parametrize("value", [-1, MAX_NEXT_ID + 1, "7", 1.5, True, None, [3]])
def test_a_bad_counter_is_refused_or_ignored_never_trusted(tmp_path, value):
    data = json.loads(session_text(Session(messages=[Message("user", "a", id="m4")])))
    data["next_id"] = value
    path = tmp_path / "bad.ctxpane.json"
    path.write_text(json.dumps(data))
    if value is None:  # the same as absent
        assert load_session(path).session.next_id == 5
        return
    with pytest.raises(SessionFileError) as caught:
        load_session(path)
    assert "next_id" in str(caught.value) and "\n" not in str(caught.value)


def test_a_counter_lower_than_the_ids_is_not_believed():
    data = json.loads(session_text(Session(messages=[Message("user", "a", id="m9")])))
    data["next_id"] = 2
    loaded, _version = decode_session(json.dumps(data).encode())
    assert loaded.next_id == 10 and loaded.new_id() == "m10"


def test_a_restored_reply_takes_a_fresh_id():
    session = Session(messages=[Message("user", "q", id="m0")], next_id=5)
    session.requests.append(RequestRecord(1, "t", {"messages": []}, reply={"content": "par", "incomplete": True},
                                          message_count=1))
    assert recover_interrupted_reply(session)
    assert session.messages[-1].id == "m5" and session.next_id == 6


def test_fence_ids_stay_distinct_after_deletes():
    wb = workbench(1)
    wb.add_document("first doc", "a.txt")
    wb.delete(1)
    wb.add_document("second doc", "b.txt")
    wb.add_document("third doc", "c.txt")
    view = wb.compute()
    fence_ids = [f.fence_id for f in view.fences]
    assert len(fence_ids) == 2 and len(set(fence_ids)) == 2
    assert "m1" not in fence_ids  # the deleted document's id (and its fence id) is not given again


async def test_a_note_stays_with_its_reply_and_never_passes_to_a_later_message(monkeypatch, tmp_path):
    isolated(monkeypatch, tmp_path)
    app = make_app(tmp_path, offline=True)
    async with app.run_test(size=(150, 42)) as pilot:
        await settle(pilot, app)
        wb = app.wb
        wb.session.messages.append(Message("assistant", "half a repl", provenance=Provenance("model", True),
                                           id=wb.new_id(), incomplete=True))
        stopped = wb.session.messages[-1].id
        app.controller.notes[stopped] = "■ stopped: the reply is kept, marked incomplete"
        app.refresh_all()
        await settle(pilot, app)
        chat = app.query_one(ChatView)
        assert "■ stopped" in chat.message_text(len(wb.session.messages) - 1)  # the note is shown under its reply
        wb.delete(len(wb.session.messages) - 1)
        wb.session.messages.append(Message("assistant", "a later answer", provenance=Provenance("model", True),
                                           id=wb.new_id()))
        app.controller.changed()
        await settle(pilot, app)
        shown = app.query_one(ChatPanel).state  # what the transcript shows
        last = shown.messages[-1]
        assert last.text() == "a later answer" and last.id != stopped
        assert shown.notes.get(last.id, "") == ""  # the note of the deleted reply stays with it
        assert "■ stopped" not in chat.message_text(len(shown.messages) - 1)
