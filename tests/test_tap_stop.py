"""Stopping the tap mid-reply (issue 26): Ctrl+C while ten replies stream cuts them within the stop's grace, writes
every conversation with what arrived (marked incomplete, and why), and says truthfully what it saved."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

import httpx
import pytest

from conftest import ROOT, free_port
from session_files import session_data
from tap_helpers import upstream  # noqa: F401 - a fixture
from waiting import until

def stream_through(url: str, scenario: str, number: int, arrived: dict) -> None:
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": f"conversation {number}"}]}
    arrived.setdefault(number, 0)
    try:
        with httpx.stream("POST", f"{url}/{scenario}/v1/chat/completions", json=body, timeout=120) as answer:
            for chunk in answer.iter_bytes():
                arrived[number] += len(chunk)
    except httpx.HTTPError:
        pass  # the stop cuts the reply: what matters is what the file holds


@pytest.mark.parametrize(("scenario", "streams"), [("slow", 10), ("slow", 1), ("late", 3)])
def test_ctrl_c_during_streams_cuts_them_and_writes_every_one(upstream, tmp_path, scenario, streams):
    """The upstream's replies would take 30 s each (600 pieces, 50 ms apart), or 60 s before it answers at all
    ('late'); the stop does not wait for them. With one reply in flight its end came after the recorder had
    closed: the reply was lost (empty, no error) and a traceback printed."""
    port, folder = free_port(), tmp_path / "tapped"
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "c"), "XDG_DATA_HOME": str(tmp_path / "d"),
           "XDG_CACHE_HOME": str(tmp_path / "k"), "PYTHONPATH": str(ROOT)}
    tap = subprocess.Popen([sys.executable, "-m", "tui", "tap", "--upstream", upstream.url, "--port",
                            str(port), "--no-ui", "--session-dir", str(folder)], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)
    try:
        assert "listening on" in tap.stdout.readline()
        seen_before = len(upstream.seen)
        arrived: dict[int, int] = {}
        clients = [threading.Thread(target=stream_through, args=(f"http://127.0.0.1:{port}", scenario, n, arrived),
                                    daemon=True) for n in range(streams)]
        for client in clients:
            client.start()
        if scenario == "slow":
            until(lambda: len(arrived) == streams and all(size > 200 for size in arrived.values()), 30,
                  "every reply under way")
        else:
            until(lambda: len(upstream.seen) >= seen_before + streams, 30, "every request at the upstream")
        tap.send_signal(signal.SIGINT)
        out, err = tap.communicate(timeout=20)  # the replies had ~28 s (or 60 s) to go: bounded well below that
    finally:
        if tap.poll() is None:
            tap.kill()
    assert tap.returncode == 0, err
    assert "Traceback" not in err, err
    files = sorted(folder.glob("*.json"))
    assert len(files) == streams
    for path in files:
        reply = session_data(path)["requests"][-1]["reply"]
        assert reply["incomplete"] is True, reply  # the stop cut the reply: it did not wait for its end
        assert reply["content"].startswith("0 1 2") if scenario == "slow" else not reply["content"], reply
        assert "the tap was stopped" in reply.get("error", ""), reply
    said = f"{streams} conversation{'s' if streams > 1 else ''} saved in {folder} ({streams} cut by the stop"
    assert said in out, out


def test_a_hurried_stop_leaves_the_queued_recording_out_and_says_so(upstream, tmp_path):
    """A stop with recording still queued (50 prompts of 1 MB took 9-42 s) could not be hurried: a second Ctrl+C
    did nothing. Hurried, what was recorded is saved and what was queued is left out, counted in the last line."""
    from tap_helpers import RunningTap
    running = RunningTap(upstream.url, tmp_path / "tapped")
    recorder, held = running.recorder, threading.Event()
    real_begin = recorder.begin

    def slow_begin(exchange):
        held.wait(30)  # the stand-in for a long render: the queue builds up behind it
        real_begin(exchange)
    recorder.begin = slow_begin
    try:
        for number in range(5):
            body = {"model": "m", "messages": [{"role": "user", "content": f"queued {number}"}]}
            assert httpx.post(f"{running.url}/ok/v1/chat/completions", json=body, timeout=30).status_code == 200
        until(lambda: recorder.queued >= 9, 10, "the queue behind the first request")
        recorder.hurry()
        held.set()
    finally:
        running.stop()
    assert recorder.left_out == 4
    assert recorder.saved_line().endswith("; 4 requests left out, not recorded (the stop was hurried)")


def test_a_normal_stop_records_every_request_still_queued(upstream, tmp_path):
    """200 quick requests whose recording lags behind (each step slowed), then a normal stop (as Ctrl+C once, SIGTERM
    and the app's quit do: the server closes, then the recorder): every request is in the session files."""
    import time

    from session_files import session_data
    from tap_helpers import RunningTap
    running = RunningTap(upstream.url, tmp_path / "tapped")
    recorder = running.recorder
    real_begin, real_finish = recorder.begin, recorder.finish

    def slow(step):
        def slowed(exchange):
            time.sleep(0.005)  # the stand-in for a long render: the queue builds up behind it
            step(exchange)
        return slowed
    recorder.begin, recorder.finish = slow(real_begin), slow(real_finish)
    try:
        with httpx.Client(timeout=30) as client:
            for number in range(200):
                body = {"model": "m", "messages": [{"role": "user", "content": f"queued request {number}"}]}
                assert client.post(f"{running.url}/ok/v1/chat/completions", json=body).status_code == 200
        assert recorder.queued > 0  # the stop comes with recording still queued
    finally:
        running.stop()
    assert recorder.left_out == 0 and recorder.failures == 0
    files = sorted((tmp_path / "tapped").glob("*.json"))
    records = [request for path in files for request in session_data(path)["requests"]]
    assert len(records) == 200
    assert all(not record["reply"].get("incomplete") for record in records)


def test_a_stop_with_recording_queued_says_how_much_is_left_now_and_then(monkeypatch, capsys):
    """A stop that records a long backlog printed one line at its start, then nothing for minutes."""
    import asyncio
    from types import SimpleNamespace

    from tui.commands import tap as command
    monkeypatch.setattr(command, "DRAIN_SAID_EVERY", 0.01)
    recorder = SimpleNamespace(queued=37, hurried=False)

    async def a_while() -> None:
        said = asyncio.ensure_future(command.draining(recorder))
        await asyncio.sleep(0.05)
        said.cancel()
    asyncio.run(a_while())
    assert "recording 37 queued steps still" in capsys.readouterr().err
