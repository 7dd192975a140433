"""Replies that end empty or cut by max_tokens are marked under them (controller, no Textual)."""

from __future__ import annotations

import pytest

from controller_helpers import connected
from fault_server import FaultServer
from tui.client.reply import Reply
from tui.controller import sending
from tui.controller.events import ChatChanged
from tui.controller.reply_marks import CUT, EMPTY


@pytest.mark.parametrize("reply, mark, kept", [
    (Reply(content="A long answer that", finish_reason="length"), CUT, True),
    (Reply(content="", finish_reason="stop"), EMPTY, False),
    (Reply(content="Fine.", finish_reason="stop"), None, True),
])
async def test_a_reply_is_marked_by_how_it_ended(tmp_path, monkeypatch, reply, mark, kept):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    async def fake_stream(client, body, on_progress, on_checkpoint, on_status):
        return reply, ""
    monkeypatch.setattr(sending, "stream_reply", fake_stream)
    with FaultServer() as server:
        made = await connected(tmp_path, server.url + "/ok")
        ctl = made.ctl
        assert ctl.submit("tell me")
        await made.idle()
        last = ctl.wb.session.messages[-1]
        assert (last.role == "assistant") is kept  # an empty reply adds no message: the mark goes under the question
        chat = made.of(ChatChanged)[-1].chat
        assert chat.notes.get(last.id) == mark
        ctl.close()
