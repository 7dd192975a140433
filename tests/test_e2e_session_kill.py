"""A kill -9 at any moment leaves a session file that opens with everything up to the last completed append
(issue 22): the real `ctxpane tap` in a real terminal (tmux), killed during a long run and during a reply, and a
file whose last line a kill cut short."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from conftest import ROOT, free_port
from tap_helpers import upstream  # noqa: F401 - the loopback upstream fixture
from tmux_driver import Tmux
from waiting import until
from tui.sessions.store import SessionAppender, load_session, save_session
from tui.sessions.model import RequestRecord, Session
from tui.context.messages import Message, Provenance


def agent(url: str, stop: threading.Event, done: list[int], tool_size: int) -> None:
    """A client whose conversation grows by a tool result and a reply each request, until stopped."""
    history: list[dict] = [{"role": "system", "content": "an agent that reads files"},
                           {"role": "user", "content": "read every file"}]
    rng = random.Random(5)
    with httpx.Client(timeout=30) as client:
        while not stop.is_set():
            try:
                answer = client.post(f"{url}/chat/completions", json={"model": "gpt-4o", "messages": history,
                                                                        "stream": True})
            except httpx.HTTPError:
                return  # the tap is gone
            if answer.status_code != 200:
                return
            done.append(len(done) + 1)
            history.append({"role": "assistant", "content": "one two three"})
            history.append({"role": "user", "content": f"file {len(done)}: " + " ".join(
                rng.choice(("alpha", "beta", "gamma", "delta")) for _ in range(tool_size))})


def start_tap(tmp_path: Path, upstream_url: str) -> tuple[Tmux, str, Path]:
    tmux = Tmux(tmp_path)
    port = free_port()
    folder = tmp_path / "tapped"
    tmux.start("tap", "--no-ui", "--upstream", upstream_url, "--port", str(port), "--session-dir", str(folder))
    tmux.wait_for(r"listening on http://127\.0\.0\.1:\d+")
    return tmux, f"http://127.0.0.1:{port}/v1", folder


def replay_check(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tui", "replay", "--check", str(path)], capture_output=True,
                          text=True, cwd=str(ROOT), timeout=300)


def _requests_in(folder: Path) -> int:
    files = list(folder.glob("*.ctxpane.json")) if folder.exists() else []
    try:
        return len(load_session(files[0]).session.requests) if len(files) == 1 else 0
    except Exception:  # written meanwhile: read again at the next poll
        return 0


@pytest.mark.parametrize("round_", range(3))
def test_kill_9_during_a_long_tap_run(tmp_path, upstream, round_):  # noqa: F811
    tmux, url, folder = start_tap(tmp_path, upstream.url + "/ok")
    stop, done = threading.Event(), []
    client = threading.Thread(target=agent, args=(url, stop, done, 1000), daemon=True)
    try:
        client.start()
        tmux.wait_for(rf"conversation 1 step {10 + 5 * round_}\b", timeout=120)  # recorded (and soon appended)
        # The tap appends a conversation at most every 0.5 s: a fast upstream shows many steps before the second
        # append. Once two are in the file, the kill comes anywhere: between two appends, or in one.
        until(lambda: _requests_in(folder) >= 2, 60, "two appends in the tap's file")
        time.sleep(random.Random(round_).uniform(0, 0.6))  # the moment of the kill is what this test varies
        os.kill(tmux.pid(), signal.SIGKILL)
        stop.set()
        client.join(30)
    finally:
        tmux.stop()
    (path,) = folder.glob("*.ctxpane.json")
    opened = load_session(path)
    requests = opened.session.requests
    assert 2 <= len(requests) <= len(done) + 1  # the appends before the kill, each whole
    for record in requests:  # every request as it was sent, byte for byte, whatever the moment of the kill
        assert record.body["messages"][-1]["role"] == "user"
        assert json.loads(record.exact_text()) == record.body
    check = replay_check(path)
    assert check.returncode == 0, check.stdout[-2000:] + check.stderr[-2000:]
    assert check.stdout.count("matches the stored request") == len(requests)


def test_kill_9_during_a_reply_through_the_tap(tmp_path, upstream):  # noqa: F811
    tmux, url, folder = start_tap(tmp_path, upstream.url)  # (its probes of the upstream get a quick 404)
    url = url.replace("/v1", "/slow/v1")
    messages = [{"role": "user", "content": "tell me a long story"}]
    try:
        with httpx.Client(timeout=30) as client:
            with client.stream("POST", f"{url}/chat/completions", json={"model": "gpt-4o", "messages": messages,
                                                                        "stream": True}) as answer:
                pieces = 0
                for _line in answer.iter_lines():
                    pieces += 1
                    if pieces > 20:
                        break
                deadline = time.monotonic() + 60
                while not any(folder.glob("*.ctxpane.json")) and time.monotonic() < deadline:
                    time.sleep(0.05)  # the request appended as it went upstream
                time.sleep(0.2)
                os.kill(tmux.pid(), signal.SIGKILL)
    except httpx.HTTPError:
        pass  # the tap went away under the reply: as it should
    finally:
        tmux.stop()
    (path,) = folder.glob("*.ctxpane.json")
    opened = load_session(path)
    (record,) = opened.session.requests
    assert record.incomplete and record.body["messages"] == messages
    assert replay_check(path).returncode == 0


def test_a_last_line_cut_short_is_left_out_and_cut_off_before_the_next_append(tmp_path):
    path = tmp_path / "cut.ctxpane.json"
    session = Session(title="cut")
    session.messages.append(Message("user", "first", provenance=Provenance("user", True), id=session.new_id()))
    session.requests.append(RequestRecord(1, "t", {"model": "m", "messages": [{"role": "user", "content": "first"}]},
                                          reply={"content": "ok"}, message_ids=["m0"], message_count=1))
    save_session(session, path)
    whole = path.read_bytes()
    session.messages.append(Message("assistant", "an answer " * 100, provenance=Provenance("model", True),
                                    id=session.new_id()))
    appender = SessionAppender()
    appender.append(session, path)
    grown = path.read_bytes()
    for cut in (len(whole) + 1, len(whole) + (len(grown) - len(whole)) // 2, len(grown) - 1):
        path.write_bytes(grown[:cut])  # what a kill in the middle of the append's write leaves
        opened = load_session(path)
        assert len(opened.session.messages) == 1 + (cut >= len(grown)) or "cut short" in opened.note
        assert "cut short" in opened.note
        again = SessionAppender()
        session.messages.append(Message("user", f"after {cut}", provenance=Provenance("user", True),
                                        id=session.new_id()))
        again.append(session, path)
        reopened = load_session(path)
        assert [m.content for m in reopened.session.messages] == [m.content for m in session.messages]
        assert reopened.note == ""
        grown = path.read_bytes()
