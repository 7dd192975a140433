"""The chat speaks each API: `api = "chat" | "responses" | "messages"` (config.toml, --api, the settings screen), so
the same pane talks to a Responses-only or an Anthropic-style endpoint. Against the real llama.cpp server, which
serves all three: each request goes in the endpoint's format, is recorded as it was sent, is counted as the
server counts it, and the session replays byte for byte."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import ROOT
from controller_helpers import Harness

pytestmark = pytest.mark.server
SHAPES = {"chat": "messages", "responses": "input", "messages": "messages"}


@pytest.mark.parametrize("api", ["chat", "responses", "messages"])
async def test_the_chat_speaks_each_api_to_the_real_server(llama_server, tmp_path, monkeypatch, api):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    made = Harness(tmp_path, base_url=llama_server, api=api, tokenizer="")
    try:
        ctl = await made.ready()
        ctl.connect()
        await made.idle()
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
