"""A reply that arrived whole is recorded whole, even when the client closed the connection right after its last event
(Codex closes as soon as it holds `response.completed`): never "the client went away mid-reply". A reply whose last
event never came is still cut. The loopback upstream's /linger keeps the connection open after the last event."""

from __future__ import annotations

import json

import httpx
import openai
import pytest

from tap_helpers import RunningTap, upstream  # noqa: F401 - upstream is a fixture

KEY = "sk-whole-reply-secret-abcdefgh"
LAST_EVENT = {"chat/completions": b"[DONE]", "messages": b"message_stop", "responses": b"response.completed"}


@pytest.fixture(scope="module")
def tap(upstream, tmp_path_factory):
    running = RunningTap(upstream.url, tmp_path_factory.mktemp("whole-sessions"))
    yield running
    running.stop()


def newest(tap: RunningTap):
    tap.settle()
    return tap.recorder.tapped[max(tap.recorder.tapped)]


def test_a_responses_stream_the_openai_sdk_leaves_after_response_completed_is_whole(tap, upstream):
    sdk = openai.OpenAI(base_url=f"{tap.url}/linger/v1", api_key=KEY, max_retries=0, timeout=20)
    stream = sdk.responses.create(model="loop-model", input="Hello", stream=True)
    kinds = []
    for event in stream:
        kinds.append(event.type)
        if event.type == "response.completed":
            break
    stream.close()  # as Codex does: it has the whole reply, the connection goes
    assert kinds[-1] == "response.completed" and upstream.client_left()
    tapped = newest(tap)
    record = tapped.record
    assert tapped.exchange.client_gone  # the fact is kept...
    assert not record.incomplete and record.reply["content"] == "fine"  # ...but the reply is whole
    assert "went away" not in json.dumps(record.reply) and not tapped.exchange.error
    assert "after the reply's last event" in record.reply["stream"]["after_end"]
    assert record.reply["provider_usage"]["input_tokens"] == 10


@pytest.mark.parametrize("api", ["messages", "chat/completions"])
def test_a_stream_left_right_after_its_last_event_is_whole(tap, upstream, api):
    body = {"model": "loop-model", "max_tokens": 5, "stream": True, "messages": [{"role": "user", "content": api}]}
    with httpx.Client(timeout=20) as client:
        with client.stream("POST", f"{tap.url}/linger/v1/{api}", json=body, headers={"x-api-key": KEY}) as answer:
            received = b""
            for piece in answer.iter_raw():
                received += piece
                if LAST_EVENT[api] in received:
                    break  # leaves with the connection still open
    assert upstream.client_left()
    record = newest(tap).record
    assert not record.incomplete and record.reply["content"] == "fine", record.reply.get("error")
    assert record.reply["stream"]["client_gone"] and not record.reply["stream"]["error"]


def test_a_stream_left_before_its_last_event_is_still_cut(tap, upstream):
    sdk = openai.OpenAI(base_url=f"{tap.url}/slow/v1", api_key=KEY, max_retries=0, timeout=20)
    stream = sdk.chat.completions.create(model="loop-model", messages=[{"role": "user", "content": "go"}],
                                         stream=True)
    next(iter(stream))
    stream.close()
    assert upstream.client_left()
    record = newest(tap).record
    assert record.incomplete and "went away mid-reply" in record.reply["error"]
