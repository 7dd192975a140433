"""The send transition of the controller, on a plain asyncio loop: no Textual anywhere.

Against the misbehaving loopback server and the real llama.cpp server: a reply streams and is kept;
stopped or failed, what arrived, the user's message and the draft are kept.
"""

from __future__ import annotations

import asyncio
import threading

import pytest

from controller_helpers import Harness, connected, harness, summarised_on_a_server  # noqa: F401 - harness is a fixture
from fault_server import FaultServer
from tui.context.templates.library import template_from_text
from tui.controller.events import (ChatChanged, Notice, ReplyEnded, ReplyGrew, ReplyStarted,
                                   StatusChanged)
from tui.sessions.model import Session
from session_files import session_data
from waiting import eventually


# -- sending ------------------------------------------------------------------------------------------------

async def test_offline_send_is_refused_and_the_draft_stays(harness):
    ctl = await harness.ready()
    ctl.set_draft("hello")
    assert not ctl.submit("hello")
    assert ctl.wb.draft == "hello" and len(ctl.wb.session.messages) == 4 and not ctl.streaming
    assert "offline" in harness.of(Notice)[-1].text


async def test_send_streams_the_reply_and_keeps_it(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FaultServer(delay=0.01) as server:
        made = await connected(tmp_path, server.url + "/ok")
        ctl = made.ctl
        assert ctl.submit("hello there") and ctl.streaming
        assert not ctl.submit("again")  # one request at a time
        await made.idle()
        assert not ctl.streaming
        kinds = [type(e) for e in made.events if isinstance(e, (ReplyStarted, ReplyGrew, ReplyEnded))]
        assert kinds[0] is ReplyStarted and kinds[-1] is ReplyEnded and ReplyGrew in kinds
        grew = made.of(ReplyGrew)  # each event says where its new text starts: the pieces make the reply
        assert [e.content_from for e in grew] == [0] + [len(e.content) for e in grew[:-1]]
        assert "".join(e.added for e in grew) == "Hello, wörld 👋"
        last = ctl.wb.session.messages[-1]
        assert last.role == "assistant" and last.text() == "Hello, wörld 👋" and not last.incomplete
        assert ctl.wb.session.messages[-2].text() == "hello there"
        assert server.requests[-1]["body"]["messages"][-1] == {"role": "user", "content": "hello there"}
        saved = session_data(ctl.file.session_file)
        assert saved["requests"][0]["reply"]["content"] == "Hello, wörld 👋"
        assert made.of(ChatChanged)[-1].chat.messages[-1] == last
        ctl.close()


async def test_stop_mid_stream_keeps_the_partial_reply(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FaultServer(delay=0.2) as server:
        made = await connected(tmp_path, server.url + "/slow")
        ctl = made.ctl
        ctl.submit("tell me a story")
        await eventually(lambda: any("reply" in e.content for e in made.of(ReplyGrew)), 10,
                         "the reply's second piece")
        ctl.stop()
        await made.idle()
        last = ctl.wb.session.messages[-1]
        assert not ctl.streaming and last.role == "assistant" and last.incomplete
        assert last.text().startswith("partial reply")
        assert ctl.wb.session.requests[-1].reply["incomplete"] is True
        assert ctl.snapshot().chat.notes[last.id].startswith("■ stopped")
        assert session_data(ctl.file.session_file)["messages"][-1]["content"].startswith("partial")
        ctl.close()


@pytest.mark.parametrize("when", ["at once", "while computing"])
async def test_stop_before_the_request_is_sent_keeps_the_message(tmp_path, monkeypatch, when):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FaultServer(delay=0.01) as server:
        made = await connected(tmp_path, server.url + "/ok")
        ctl = made.ctl
        release, started = threading.Event(), threading.Event()
        compute = ctl.wb.compute

        def slow_compute(*args, **kwargs):
            started.set()
            release.wait(10)
            return compute(*args, **kwargs)
        ctl.wb.compute = slow_compute
        sent = len(server.requests)
        ctl.submit("never mind")
        if when == "while computing":
            await asyncio.to_thread(started.wait, 10)
        ctl.stop()
        release.set()
        await made.idle()
        assert not ctl.streaming and len(server.requests) == sent and not ctl.wb.session.requests
        assert ctl.wb.session.messages[-1].text() == "never mind"
        assert made.of(StatusChanged)[-1].text.startswith("■ stopped before it was sent")
        ctl.close()

@pytest.mark.parametrize("scenario", ["cut", "boom"])
async def test_a_failed_send_keeps_the_users_message_and_draft(tmp_path, monkeypatch, scenario):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FaultServer(delay=0.05) as server:
        made = await connected(tmp_path, server.url + f"/{scenario}")
        ctl = made.ctl
        ctl.submit("my question")
        ctl.set_draft("the next one, typed while it was sent")
        await made.idle()
        messages = ctl.wb.session.messages
        question = next(m for m in messages if m.text() == "my question")
        assert question.role == "user" and not ctl.streaming
        assert ctl.wb.draft == "the next one, typed while it was sent"
        assert made.of(StatusChanged)[-1].text.startswith("✗") and made.of(StatusChanged)[-1].style == "red"
        saved = session_data(ctl.file.session_file)
        assert any(m["content"] == "my question" for m in saved["messages"])
        if scenario == "cut":  # something arrived: kept, incomplete, with the reason under it
            assert messages[-1].incomplete and messages[-1].text().startswith("partial reply kept")
            assert "closed the connection" in ctl.snapshot().chat.notes[messages[-1].id]
        ctl.close()


async def test_a_template_that_refuses_sends_nothing_and_keeps_the_message(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FaultServer(delay=0.01) as server:
        made = await connected(tmp_path, server.url + "/ok")
        ctl = made.ctl
        ctl.wb.set_template(template_from_text("{{ raise_exception('no, not this one') }}", "server:test", "t"))
        sent = len(server.requests)
        ctl.submit("will not go")
        await made.idle()
        assert not ctl.streaming and ctl.wb.session.messages[-1].text() == "will not go"
        assert len(server.requests) == sent and "rejects the conversation" in made.of(Notice)[-1].text
        ctl.close()


async def test_resend_from_a_message_drops_what_follows_and_sends(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FaultServer(delay=0.01) as server:
        made = await connected(tmp_path, server.url + "/ok")
        ctl = made.ctl
        ctl.resend_from(2)  # the assistant's answer: re-sent from the user message before it
        await made.idle()
        assert [m.text() for m in ctl.wb.session.messages[:2]] == ["You are terse.", "What is the quota?"]
        assert server.requests[-1]["body"]["messages"][-1] == {"role": "user", "content": "What is the quota?"}
        assert ctl.wb.session.messages[-1].role == "assistant" and len(ctl.wb.session.messages) == 3
        ctl.close()


async def test_summarise_makes_a_summary_before_sending(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    async with summarised_on_a_server(tmp_path) as (made, server):
        assert any("summary made" in e.text for e in made.of(StatusChanged))
        assert any("whole reply" in m["content"] for m in server.requests[-1]["body"]["messages"])


# -- the real server --------------------------------------------------------------------------------------------

@pytest.mark.server
async def test_a_real_streaming_send_to_llama_server(llama_server, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    made = Harness(tmp_path, base_url=llama_server, tokenizer="")
    made.ctl.adopt(Session(params={"temperature": 0, "max_tokens": 24}), None)  # greedy and short: always text
    made.ctl.connect()
    await made.idle()
    ctl = made.ctl
    assert ctl.client is not None and "llama.cpp" in made.of(StatusChanged)[-1].text
    ctl.set_draft("Say hello in three words.")
    await made.idle()
    counted = ctl.wb.view.sent_tokens
    assert ctl.submit("Say hello in three words.")
    await made.idle()
    record = ctl.wb.session.requests[-1]
    arrived = record.reply.get("content") or ""
    assert not record.incomplete and arrived, record.reply
    assert ctl.wb.session.messages[-1].role == "assistant" and ctl.wb.session.messages[-1].text() == arrived
    assert made.of(ReplyStarted) and made.of(ReplyEnded)
    assert record.usage and record.usage["prompt_tokens"] == counted == record.document_tokens
    ctl.close()
