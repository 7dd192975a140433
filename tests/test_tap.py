"""`ctxpane tap` in front of the real llama.cpp server, driven by real clients (the openai SDK, curl).

Each client must get byte for byte what the upstream sent (the tap keeps a copy of the upstream's bytes
as it forwards them), the same reply as a direct call, and each conversation's session must replay
with `replay --check`. Agents that trim their history or rewrite their system prompt are caught:
the client's own ledger entries and the cache cause.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import openai
import pytest

from conftest import ROOT
from tap_helpers import RunningTap
from waiting import until

pytestmark = pytest.mark.server
KEY = "sk-tap-test-secret-0123456789"
PARAMS = {"model": "tiny-qwen3", "max_tokens": 6, "temperature": 0, "seed": 1}


@pytest.fixture(scope="module")
def tapped(llama_server, tmp_path_factory):
    folder = tmp_path_factory.mktemp("tap-sessions")
    tap = RunningTap(llama_server, folder)
    yield tap
    tap.stop()


def client(base: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=base, api_key=KEY, max_retries=0, timeout=60)


def upstream_bytes(tap: RunningTap, number: int) -> bytes:
    return b"".join(tap.recorder.tapped[number].exchange.chunks)


def last_number(tap: RunningTap) -> int:
    tap.settle()
    return max(tap.recorder.tapped)


def replay_check(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tui", "replay", "--check", str(path)], capture_output=True,
                          text=True, timeout=120, cwd=str(ROOT))


def without_volatile(data: dict) -> dict:
    """A reply without what differs between two identical calls (id, creation time, timings, cache reuse)."""
    kept = {k: v for k, v in data.items() if k not in ("id", "created", "timings", "system_fingerprint")}
    if isinstance(kept.get("usage"), dict):
        kept["usage"] = {k: v for k, v in kept["usage"].items() if k != "prompt_tokens_details"}
    return kept


def test_openai_sdk_non_streamed_gets_the_upstream_bytes_and_the_direct_reply(tapped, llama_server):
    messages = [{"role": "user", "content": "Name a colour."}]
    raw = client(tapped.url).chat.completions.with_raw_response.create(messages=messages, **PARAMS)
    through = raw.http_response.content
    number = last_number(tapped)
    assert through == upstream_bytes(tapped, number)
    direct = client(llama_server).chat.completions.with_raw_response.create(messages=messages, **PARAMS)
    assert without_volatile(json.loads(through)) == without_volatile(json.loads(direct.http_response.content))
    assert raw.parse().choices[0].message.content == direct.parse().choices[0].message.content
    record = tapped.recorder.tapped[number].record
    assert record.body == {"messages": messages, **PARAMS}
    assert record.reply["content"] == raw.parse().choices[0].message.content
    assert record.usage["prompt_tokens"] == record.document_tokens  # the upstream read what the tap rendered


def test_openai_sdk_streamed_gets_each_chunk_and_the_direct_reply(tapped, llama_server):
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Count."}]
    with client(tapped.url).chat.completions.with_streaming_response.create(
            messages=messages, stream=True, stream_options={"include_usage": True}, **PARAMS) as response:
        through = b"".join(response.iter_bytes())
    number = last_number(tapped)
    assert through == upstream_bytes(tapped, number)
    exchange = tapped.recorder.tapped[number].exchange
    assert len(exchange.chunks) > 3  # it streamed in pieces, each forwarded as it came

    def contents(raw: bytes) -> list:
        events = [line[6:] for line in raw.decode().split("\n") if line.startswith("data: ")]
        return [[c.get("delta") for c in json.loads(e)["choices"]] for e in events if e != "[DONE]"]

    direct = client(llama_server).chat.completions.with_streaming_response.create(
        messages=messages, stream=True, stream_options={"include_usage": True}, **PARAMS)
    with direct as response:
        assert contents(through) == contents(b"".join(response.iter_bytes()))
    record = tapped.recorder.tapped[number].record
    assert record.reply["stream"]["raw"] == through.decode()
    assert record.reply["stream"]["chunks"] == len(exchange.chunks)
    assert record.usage["prompt_tokens"] == record.document_tokens


def test_curl_gets_the_upstream_bytes_and_the_key_goes_nowhere_but_upstream(tapped):
    body = json.dumps({"messages": [{"role": "user", "content": "curl says hi"}], **PARAMS, "stream": True})
    result = subprocess.run(["curl", "-sN", f"{tapped.url}/chat/completions", "-H", "Content-Type: application/json",
                             "-H", f"Authorization: Bearer {KEY}", "-d", body], capture_output=True, timeout=60)
    assert result.returncode == 0
    number = last_number(tapped)
    assert result.stdout == upstream_bytes(tapped, number) and result.stdout.endswith(b"data: [DONE]\n\n")
    assert tapped.recorder.tapped[number].exchange.client.startswith("curl/")
    models = subprocess.run(["curl", "-s", f"{tapped.url}/models"], capture_output=True, timeout=30)
    assert json.loads(models.stdout)["data"][0]["id"] == "tiny-qwen3"
    files = list(tapped.folder.glob("*.ctxpane.json"))
    assert files and all(KEY not in f.read_text() and "Bearer" not in f.read_text() for f in files)


def test_an_agent_that_trims_its_history_is_caught_and_its_session_replays(tapped):
    sdk = client(tapped.url)
    system = {"role": "system", "content": "You are the trimming agent."}
    history = [system, {"role": "user", "content": "first question"}]
    numbers = []
    for turn in range(3):
        reply = sdk.chat.completions.create(messages=history, **PARAMS)
        numbers.append(last_number(tapped))
        history += [{"role": "assistant", "content": reply.choices[0].message.content},
                    {"role": "user", "content": f"question {turn + 2}"}]
    history = [system] + history[-3:]  # the agent keeps the system prompt and its last exchange only
    sdk.chat.completions.create(messages=history, **PARAMS)
    numbers.append(last_number(tapped))
    steps = [tapped.recorder.tapped[n] for n in numbers]
    assert len({s.conversation for s in steps}) == 1 and [s.index for s in steps] == [0, 1, 2, 3]
    cut = steps[-1].record.dropped
    assert [entry["policy"] for entry in cut] == ["client"] * 4  # two questions, two replies: gone
    assert [entry["role"] for entry in cut] == ["user", "assistant", "user", "assistant"]
    assert all(entry["tokens"] > 0 for entry in cut)
    assert steps[-1].record.cache_class == "truncation shift"
    assert steps[-1].record.predicted_cached == steps[-1].record.cached_reported  # the prediction held
    # The server reuses the prompt it computed, not the reply re-sent (the tap asks for no logprobs, so the
    # generated tokens are not known): the prediction stops where that reply begins, and says so.
    assert steps[1].record.dropped == [] and steps[1].record.cache_class == "reply re-rendered"
    assert steps[1].record.predicted_cached == steps[1].record.cached_reported == steps[0].record.document_tokens
    path = tapped.recorder.threads[steps[0].conversation].path
    result = replay_check(path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("matches the stored request") == 4
    assert "4 dropped" in result.stdout.splitlines()[-1]


def test_an_agent_that_rewrites_its_system_prompt_is_caught(tapped):
    sdk = client(tapped.url)
    history = [{"role": "system", "content": "Version one of the rules."}, {"role": "user", "content": "go"}]
    reply = sdk.chat.completions.create(messages=history, **PARAMS)
    first = last_number(tapped)
    history += [{"role": "assistant", "content": reply.choices[0].message.content},
                {"role": "user", "content": "and again"}]
    history[0] = {"role": "system", "content": "Version two of the rules, longer than before."}
    sdk.chat.completions.create(messages=history, **PARAMS)
    second = tapped.recorder.tapped[last_number(tapped)]
    assert second.conversation == tapped.recorder.tapped[first].conversation and second.index == 1
    (entry,) = second.record.dropped
    assert entry["policy"] == "client-rewrite" and entry["role"] == "system" and entry["tokens"] > 0
    assert "rewrote its system prompt" in entry["reason"]
    assert second.record.cache_class == "system prompt"
    assert second.record.cached_reported is not None and second.record.cached_reported < 5
    result = replay_check(tapped.recorder.threads[second.conversation].path)
    assert result.returncode == 0 and "changed system prompt" in result.stdout, result.stdout + result.stderr


def test_an_unrelated_request_starts_its_own_conversation(tapped):
    sdk = client(tapped.url)
    sdk.chat.completions.create(messages=[{"role": "user", "content": "alpha"}], **PARAMS)
    one = tapped.recorder.tapped[last_number(tapped)]
    sdk.chat.completions.create(messages=[{"role": "user", "content": "beta"}], **PARAMS)
    two = tapped.recorder.tapped[last_number(tapped)]
    assert one.conversation != two.conversation and one.index == two.index == 0


def test_interleaved_conversations_are_predicted_against_the_servers_whole_cache(tapped):
    """One slot, two agents taking turns: the prompt each continues has left the slot for the server's
    prompt cache; the tap models both (as the app does) and predicts what the server reports."""
    sdk = client(tapped.url)
    a = [{"role": "system", "content": "Agent A, interleaved " * 12}, {"role": "user", "content": "a1"}]
    b = [{"role": "system", "content": "Agent B, interleaved " * 12}, {"role": "user", "content": "b1"}]
    numbers = {}
    for name, history in (("a1", a), ("b1", b)):
        reply = sdk.chat.completions.create(messages=history, **PARAMS)
        numbers[name] = last_number(tapped)
        history += [{"role": "assistant", "content": reply.choices[0].message.content},
                    {"role": "user", "content": name + " again"}]
    sdk.chat.completions.create(messages=a, **PARAMS)
    second = tapped.recorder.tapped[last_number(tapped)]
    first = tapped.recorder.tapped[numbers["a1"]]
    assert second.conversation == first.conversation and second.index == 1
    record = second.record
    assert record.cached_reported and record.cached_reported > 30
    assert record.predicted_cached == record.cached_reported, (record.cache_place, record.cache_cause)
    assert record.cache_source == 1 and f"#{numbers['a1']}" in record.cache_place


def test_other_endpoints_and_upstream_errors_come_back_as_the_upstream_sent_them(tapped, llama_server):
    sdk = client(tapped.url)
    raw = sdk.completions.with_raw_response.create(model="tiny-qwen3", prompt="Once", max_tokens=3, temperature=0)
    number = last_number(tapped)
    assert raw.http_response.content == upstream_bytes(tapped, number)
    assert "passed through" in tapped.recorder.tapped[number].problem  # forwarded, listed, not rendered
    bad = b'{"model": "tiny-qwen3", "messages": "not a list"}'
    through = httpx.post(f"{tapped.url}/chat/completions", content=bad, headers={"Content-Type": "application/json"})
    direct = httpx.post(f"{llama_server}/chat/completions", content=bad, headers={"Content-Type": "application/json"})
    assert through.status_code == direct.status_code >= 400
    assert through.content == direct.content and through.headers["content-type"] == direct.headers["content-type"]


def test_a_client_that_leaves_mid_stream_stops_the_real_servers_generation(tapped, llama_server):
    root = llama_server.removesuffix("/v1")

    def predicted() -> int:  # tokens the server generated so far, all requests together
        lines = httpx.get(f"{root}/metrics").text.splitlines()
        return int(float(next(line.split()[-1] for line in lines if line.startswith("llamacpp:tokens_predicted_total"))))

    before = predicted()
    body = {"model": "tiny-qwen3", "messages": [{"role": "user", "content": "go on and on"}], "stream": True,
            "max_tokens": 6000, "ignore_eos": True, "temperature": 0}
    with httpx.stream("POST", f"{tapped.url}/chat/completions", json=body, timeout=60) as response:
        lines = response.iter_lines()
        assert sum(1 for _, line in zip(range(12), lines) if line.startswith("data: ")) >= 5
    until(lambda: not any(slot.get("is_processing") for slot in httpx.get(f"{root}/slots").json()), 120,
          "the server to stop generating for a client that had left", poll=0.1)
    assert predicted() - before < 6000  # it stopped long before the 6,000 tokens asked for
    tapped.settle()
    gone = tapped.recorder.tapped[max(tapped.recorder.tapped)]
    assert gone.exchange.client_gone and gone.record.reply["incomplete"]
    assert gone.record.usage is None or gone.record.usage.get("completion_tokens", 0) < 6000
