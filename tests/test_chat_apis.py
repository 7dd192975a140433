"""The chat speaks each API: `api = "chat" | "responses" | "messages"` (config.toml, --api, the settings screen), so
the same pane talks to a Responses-only or an Anthropic-style endpoint. Against the real llama.cpp server, which
serves all three: each request goes in the endpoint's format, is recorded as it was sent, is counted as the
server counts it, and the session replays byte for byte."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import ROOT
from controller_helpers import connected

pytestmark = pytest.mark.server
SHAPES = {"chat": "messages", "responses": "input", "messages": "messages"}


@pytest.mark.parametrize("api", ["chat", "responses", "messages"])
async def test_the_chat_speaks_each_api_to_the_real_server(llama_server, tmp_path, monkeypatch, api):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    made = await connected(tmp_path, llama_server, api=api, tokenizer="")
    try:
        ctl = made.ctl
        assert ctl.client is not None and ctl.client.endpoint.api == api
        ctl.wb.set_policy(max_tokens=6)
        ctl.wb.session.params["temperature"] = 0  # (greedy: the tiny model always answers in words)
        await made.send("Hello there")
        await made.send("And again")
        records = ctl.wb.session.requests
        assert len(records) == 2
        for record in records:
            assert record.format == api and SHAPES[api] in record.body
            assert record.reply["content"] and not record.incomplete, record.reply
            assert record.usage["prompt_tokens"] == record.document_tokens  # the server read what the pane showed
        if api == "messages":
            assert records[1].body["system"] == "You are terse." and records[1].body["max_tokens"] == 6
        if api == "responses":
            assert records[1].body["instructions"] == "You are terse." and records[1].body["max_output_tokens"] == 6
        assert ctl.snapshot().pane.url.endswith({"chat": "/chat/completions", "responses": "/responses",
                                                 "messages": "/messages"}[api])
        path = ctl.file.session_file
        await made.idle()
    finally:
        made.ctl.close()
    checked = subprocess.run([sys.executable, "-m", "tui", "replay", "--check", str(path)], capture_output=True,
                             text=True, timeout=120, cwd=str(ROOT))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.count("matches the stored request") == 2


@pytest.mark.parametrize("api", ["responses", "messages"])
async def test_esc_stops_a_reply_over_each_api_and_the_next_one_goes(llama_server, tmp_path, monkeypatch, api):
    """Stopped mid-stream, what arrived is kept, marked incomplete, recorded in the endpoint's format; the stream
    over that API is let go, so the next question is answered."""
    from tui.controller.events import ReplyGrew
    from waiting import eventually
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    made = await connected(tmp_path, llama_server, api=api, tokenizer="")
    try:
        ctl = made.ctl
        ctl.wb.set_policy(max_tokens=400)
        ctl.wb.session.params["temperature"] = 1.0
        for _attempt in range(4):  # the tiny model may end its reply before the stop lands: ask again
            grown = len(made.of(ReplyGrew))
            ctl.submit("Tell me a very long story about a lighthouse keeper, in many chapters.")
            await eventually(lambda grown=grown: len(made.of(ReplyGrew)) > grown, 60, "the reply's first piece")
            ctl.stop()
            await made.idle()
            if ctl.wb.session.messages[-1].incomplete:
                break
        last = ctl.wb.session.messages[-1]
        record = ctl.wb.session.requests[-1]
        assert not ctl.streaming and last.role == "assistant" and last.incomplete and last.text()
        assert record.format == api and record.reply["incomplete"] is True
        assert ctl.snapshot().chat.notes[last.id].startswith("■ stopped")
        ctl.wb.set_policy(max_tokens=4)
        ctl.wb.session.params.update(temperature=0, seed=7)  # greedy: a reply with no text would add no message
        await made.send("And now?")
        assert ctl.wb.session.requests[-1] is not record and not ctl.wb.session.requests[-1].incomplete
        assert ctl.wb.session.messages[-1].role == "assistant" and ctl.wb.session.messages[-1].text()
    finally:
        made.ctl.close()
