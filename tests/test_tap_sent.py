"""The request kept whole, through the tap in front of the real llama.cpp server: the path with its query and the
headers are recorded (credentials `***`, masked whole as a body's are), `ctxpane export --format curl` sends the
same request again (Claude Code's `?beta=true`, `anthropic-beta`, its session id, the body's bytes; the key as the
user's variable) and the server counts what it counted for the client; `replay` shows those fields and keeps a
count recorded exact labelled exact."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import anthropic
import httpx
import openai
import pytest

from conftest import ROOT
from tap_helpers import RunningTap

pytestmark = pytest.mark.server
KEY = "sk-ant-sent-secret-0123456789abcdef"
BETAS = ["claude-code-20250219", "interleaved-thinking-2025-05-14", "context-management-2025-06-27"]


@pytest.fixture(scope="module")
def tapped(llama_server, tmp_path_factory):
    tap = RunningTap(llama_server, tmp_path_factory.mktemp("tap-sent"))
    yield tap
    tap.stop()


def ctxpane(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tui", *args], capture_output=True, text=True, timeout=120,
                          cwd=str(ROOT), env={**os.environ, **(env or {})})


def newest(tap: RunningTap):
    tap.settle()
    return tap.recorder.tapped[max(tap.recorder.tapped)]


def claude_code_request(tap: RunningTap, session: str):
    sdk = anthropic.Anthropic(base_url=tap.url.removesuffix("/v1"), api_key=KEY, max_retries=0, timeout=60,
                              default_headers={"X-Claude-Code-Session-Id": session, "x-app": "cli",
                                               "User-Agent": "claude-cli/2.0.14 (external, cli)"},
                              default_query={"beta": "true"})  # (Claude Code's path; this SDK sends no query)
    return sdk.beta.messages.create(model="claude-sonnet-4-5", max_tokens=4, betas=BETAS,
                                    system=[{"type": "text", "text": "You are Claude Code."}],
                                    messages=[{"role": "user", "content": "List the files, héhé"}],
                                    metadata={"user_id": f"user_{'0' * 64}_account__session_{session}"},
                                    extra_body={"temperature": 0})


def test_a_claude_code_request_is_recorded_whole_and_its_curl_export_sends_it_again(tapped, llama_server):
    session = str(uuid.uuid4())
    answer = claude_code_request(tapped, session)
    tap = newest(tapped)
    record = tap.record
    sent = record.sent
    assert sent["method"] == "POST" and sent["path"] == "/v1/messages?beta=true"
    headers = {name.lower(): value for name, value in sent["headers"]}
    assert headers["anthropic-beta"] == ",".join(BETAS) and headers["x-claude-code-session-id"] == session
    key_header = "x-api-key" if "x-api-key" in headers else "authorization"  # (this SDK's version: Authorization)
    assert headers[key_header] == "***" and headers["user-agent"] == "claude-cli/2.0.14 (external, cli)"
    path = tapped.recorder.threads[tap.conversation].path
    assert KEY not in path.read_text()
    exported = ctxpane("export", str(path), "--format", "curl", "--api-key-env", "ANTHROPIC_API_KEY")
    command = exported.stdout
    assert exported.returncode == 0 and KEY not in command, exported.stderr
    assert "/v1/messages?beta=true" in command and f"X-Claude-Code-Session-Id: {session}" in command
    assert "anthropic-beta: claude-code-20250219," in command and '"$ANTHROPIC_API_KEY"' in command
    again = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=60,
                           env={**os.environ, "ANTHROPIC_API_KEY": KEY})
    reply = json.loads(again.stdout)
    prompt = reply["usage"]["input_tokens"] + (reply["usage"].get("cache_read_input_tokens") or 0)
    first = answer.usage.input_tokens + (answer.usage.cache_read_input_tokens or 0)
    assert prompt == first == record.document_tokens  # the same request: the server counts the same prompt


def test_replay_shows_how_it_was_sent_and_an_exact_count_stays_exact(tapped):
    sdk = openai.OpenAI(base_url=tapped.url, api_key=KEY, max_retries=0, timeout=60)
    sdk.chat.completions.create(model="tiny-qwen3", messages=[{"role": "user", "content": "hello"}], max_tokens=3)
    tap = newest(tapped)
    assert tap.record.tokens_exact
    path = tapped.recorder.threads[tap.conversation].path
    shown = ctxpane("replay", "--json", str(path))
    step = json.loads(shown.stdout.splitlines()[-1])
    assert step["exact"] is True and step["tokens"] == step["tokens_stored"]  # was "estimate" (exact False)
    assert step["sent"]["path"] == "/v1/chat/completions"
    headers = {name.lower(): value for name, value in step["sent"]["headers"]}
    assert headers["authorization"] == "***" and KEY not in shown.stdout


def test_credential_headers_and_cookies_are_masked_whole_and_left_out_of_the_curl(tapped):
    body = {"model": "tiny-qwen3", "max_tokens": 2, "messages": [{"role": "user", "content": "cookies"}]}
    httpx.post(f"{tapped.url}/chat/completions?api-version=1&key={KEY}", json=body, timeout=60, headers={
        "Authorization": f"Bearer {KEY}", "api-key": "short", "Cookie": "sid=abcdefghijklmnop; theme=dark",
        "X-Trace": f"carries {KEY} inside"})
    tap = newest(tapped)
    headers = dict(tap.record.sent["headers"])
    assert headers["Authorization"] == headers["api-key"] == headers["Cookie"] == "***"
    assert headers["X-Trace"] == "carries *** inside" and tap.record.sent["path"].endswith("key=***")
    path: Path = tapped.recorder.threads[tap.conversation].path
    text = path.read_text()
    assert KEY not in text and "abcdefghijklmnop" not in text
    command = ctxpane("export", str(path), "--format", "curl").stdout
    assert command.startswith("# left out, recorded as *** (a credential): Cookie, X-Trace")
    assert '-H \'Authorization: Bearer \'"$OPENAI_API_KEY"' in command and "-H 'api-key: '\"$OPENAI_API_KEY\"" in command
