"""Taps refuse loops (tui/tap/hops.py): two real taps whose upstreams are each other answer one request with one
clear 508 at once (they passed it back and forth thousands of times before, until something timed out), and a chain
of two taps in front of a loopback upstream still works, its hop mark recorded by neither tap as the client's."""

from __future__ import annotations

import json
import subprocess
import time

import httpx
import pytest

from conftest import free_port
from tap_helpers import RunningTap, upstream  # noqa: F401 - upstream is a fixture
from tui.tap.hops import HOP_HEADER, MAX_TAPS

CHAT = {"model": "loop-model", "messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture()
def facing_taps(tmp_path):
    """Tap A in front of tap B in front of tap A (B listens on a port chosen first, so that A can name it)."""
    port_b = free_port()
    a = RunningTap(f"http://127.0.0.1:{port_b}", tmp_path / "a")
    b = RunningTap(a.url, tmp_path / "b", port=port_b)
    yield a, b
    for tap in (a, b):
        tap.stop()


def seen(*taps: RunningTap) -> int:
    """Requests that reached the taps: forwarded ones and refused ones."""
    return sum(t.tap.server.count + t.tap.server.loops_refused for t in taps)


def chats(tap: RunningTap) -> int:
    """Chat requests forwarded by the tap."""
    return sum(t.exchange.path.endswith("/chat/completions") for t in tap.recorder.tapped.values())


def test_two_taps_in_front_of_each_other_answer_one_clear_508_at_once(facing_taps):
    a, b = facing_taps
    started = time.monotonic()
    curl = subprocess.run(["curl", "-sS", "-m", "20", "-w", "\n%{http_code}", "-H", "Content-Type: application/json",
                           "-d", json.dumps(CHAT), f"{a.url}/v1/chat/completions"],
                          capture_output=True, text=True, timeout=60)
    took = time.monotonic() - started
    body, _, status = curl.stdout.rpartition("\n")
    assert curl.returncode == 0 and status == "508", (curl.returncode, curl.stdout[:300], curl.stderr[:300])
    error = json.loads(body)["error"]
    assert error["type"] == "loop_detected" and error["code"] == 508
    assert "loop detected" in error["message"] and a.tap.server.upstream in error["message"]
    assert "\n" not in error["message"] and took < 5, took
    for tap in (a, b):
        tap.settle()
    # The chat request passed each tap once, and its second pass through A was refused. Each recorder's probes of
    # its upstream (the engine: /props, /v1/models, …) go round the same way and end the same way: a few more.
    # Before, one request went round hundreds of times a second until a timeout.
    assert [chats(a), chats(b)] == [1, 1]
    assert seen(a, b) <= 40, (a.tap.server.count, b.tap.server.count, a.tap.server.loops_refused)
    settled = seen(a, b)
    time.sleep(0.5)
    assert seen(a, b) == settled  # nothing still going round


def test_a_chain_of_two_taps_in_front_of_an_upstream_works_and_records_no_hop_header(upstream, tmp_path):
    near = RunningTap(upstream.url, tmp_path / "near")
    far = RunningTap(near.url, tmp_path / "far")
    try:
        answer = httpx.post(f"{far.url}/reply/v1/chat/completions", json=CHAT, timeout=30,
                            headers={"X-Custom": "kept"})
        assert answer.status_code == 200 and answer.json()["choices"][0]["message"]["content"] == "fine"
        headers = {k.lower(): v for k, v in upstream.seen[-1]["headers"]}
        assert headers[HOP_HEADER.lower()] == f"{far.tap.server.tap_id}, {near.tap.server.tap_id}"
        assert headers["x-custom"] == "kept"
        for tap in (near, far):
            tap.settle()
            recorded_requests = [t.record for t in tap.recorder.tapped.values() if t.record is not None]
            assert len(recorded_requests) == 1  # (the far tap's probes of its upstream pass the near one: not chats)
            sent = recorded_requests[0].sent
            names = [name.lower() for name, _value in sent["headers"]]
            assert "x-custom" in names and HOP_HEADER.lower() not in names, names
            recorded = "".join(p.read_text() for p in tap.folder.rglob("*") if p.is_file())
            assert recorded and HOP_HEADER.lower() not in recorded.lower()
    finally:
        far.stop()
        near.stop()


def test_a_request_that_has_passed_too_many_taps_is_refused(upstream, tmp_path):
    tap = RunningTap(upstream.url, tmp_path)
    try:
        hops = ", ".join(f"other{n}" for n in range(MAX_TAPS))
        answer = httpx.post(f"{tap.url}/reply/v1/chat/completions", json=CHAT, timeout=30, headers={HOP_HEADER: hops})
        assert answer.status_code == 508 and f"{MAX_TAPS} taps" in answer.json()["error"]["message"]
        fewer = ", ".join(f"other{n}" for n in range(MAX_TAPS - 1))
        assert httpx.post(f"{tap.url}/reply/v1/chat/completions", json=CHAT, timeout=30,
                          headers={HOP_HEADER: fewer}).status_code == 200
    finally:
        tap.stop()
