"""Attacks on the rebuilt core (issue 10): each test is a defect found by a hostile user or reader.

Controller tests run on a plain asyncio loop (tests/controller_helpers.py); pilot tests drive the app.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from controller_helpers import Harness, connected, conversation, harness  # noqa: F401 - harness is a fixture
from fault_server import FaultServer
from tui.controller.events import ReplyEnded, ReplyProgress, ReplyStarted, SessionChanged
from tui.sessions.store import load_session


async def _first_progress(made: Harness) -> None:
    for _ in range(200):
        await asyncio.sleep(0.02)
        if made.of(ReplyProgress):
            return
    raise AssertionError("no reply arrived")


async def _until_done(made: Harness) -> None:
    for _ in range(300):
        await made.idle(0.05)
        if not made.ctl.streaming:
            return
    raise AssertionError("the reply never ended")


@pytest.mark.parametrize("how", ["new session", "open file"])
async def test_switching_session_while_streaming_keeps_the_reply_in_its_own_session(tmp_path, monkeypatch, how):
    """A reply still arriving when another session is opened: nothing of it is shown in the other session,
    and all of it (not only what had arrived at the switch) is saved in its own file."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FaultServer(delay=0.1) as server:
        made = await connected(tmp_path, server.url + "/slow")
        ctl = made.ctl
        other = tmp_path / "other.ctxpane.json"
        if how == "open file":
            from tui.sessions.store import save_session
            save_session(conversation(), other)
        assert ctl.submit("tell me a story")
        await _first_progress(made)
        first_file = ctl.file.session_file
        ctl.new_session() if how == "new session" else ctl.open_file(other)
        await made.idle(0.05)
        switched = max(i for i, e in enumerate(made.events) if isinstance(e, SessionChanged))
        await _until_done(made)
        after = made.events[switched:]
        assert not [e for e in after if isinstance(e, (ReplyProgress, ReplyStarted))], \
            "the old session's reply is streamed into the newly opened one"
        saved = load_session(first_file).session
        assert saved.messages[-1].role == "assistant"
        assert saved.messages[-1].text() == "partial reply kept", "the end of the reply was never saved"
        assert saved.requests[-1].reply["content"] == "partial reply kept"
        ctl.close()


# -- quitting while a reply streams (the app) ---------------------------------------------------------------

async def test_quit_while_a_reply_streams_keeps_all_that_arrived(tmp_path, monkeypatch):
    """Ctrl+Q mid-reply: the file holds the user's message and every piece of the reply shown on screen,
    not only what the last once-a-second checkpoint saved."""
    from app_helpers import isolated, make_app, settle
    from tui.sessions.model import recover_interrupted_reply
    isolated(monkeypatch, tmp_path)
    with FaultServer(delay=0.3) as server:
        app = make_app(tmp_path, flags={"base_url": f"{server.url}/slow"})
        async with app.run_test(size=(120, 30)) as pilot:
            await settle(pilot, app)
            await pilot.press(*"tell me", "enter")
            for _ in range(200):
                await pilot.pause(0.02)
                view = app.query_one("ChatView")
                if view._live is not None and "reply" in view._live.content:
                    break
            shown = view._live.content
            assert shown.startswith("partial reply")
            path = app.session_file
            await pilot.press("ctrl+q")
        session = load_session(path).session
        recover_interrupted_reply(session)
        assert session.messages[0].text() == "tell me"
        assert session.messages[-1].role == "assistant" and session.messages[-1].text().startswith(shown), \
            (session.messages[-1].text(), shown)


@pytest.mark.parametrize("action", ["delete", "edit"])
async def test_the_message_a_reply_answers_cannot_change_under_it(tmp_path, monkeypatch, action):
    """Deleting (or rewriting) the user's message while its reply streams left the reply answering a message
    that no longer exists: two assistant replies in a row, or a reply to a question never asked."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FaultServer(delay=0.1) as server:
        made = await connected(tmp_path, server.url + "/slow")
        ctl = made.ctl
        assert ctl.submit("tell me a story")
        await _first_progress(made)
        index = len(ctl.wb.session.messages) - 1
        asked = ctl.wb.session.messages[index]
        if action == "delete":
            ctl.delete(index, asked)
        else:
            ctl.edit(index, "something else entirely", asked)
        await _until_done(made)
        messages = ctl.wb.session.messages
        assert messages[-1].role == "assistant"
        assert messages[-2].role == "user" and messages[-2].text() == "tell me a story"
        sent = ctl.wb.session.requests[-1].body["messages"][-1]["content"]
        assert sent == messages[-2].text()
        ctl.close()


async def test_a_document_attached_while_a_reply_streams_does_not_split_question_and_reply(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FaultServer(delay=0.1) as server:
        made = await connected(tmp_path, server.url + "/slow")
        ctl = made.ctl
        assert ctl.submit("tell me a story")
        await _first_progress(made)
        ctl.attach("Quota: 250 GB.", "file:notes.txt")
        await _until_done(made)
        messages = ctl.wb.session.messages
        assert messages[-1].role == "assistant" and messages[-2].text() == "tell me a story"
        ctl.close()
