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
