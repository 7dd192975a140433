"""The tap under faults and hostile input, with a small loopback upstream (tests/tap_helpers.py).

Pass-through of headers, query and body; credentials forwarded but never recorded; bodies of 10 MB
pass and bodies over the limit get a clear 413; an upstream that is down, or breaks off mid-stream;
a client that leaves mid-stream (the upstream request is cancelled); two clients streaming at once;
the headless command and its warning when it listens beyond this machine.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import threading

import httpx
import openai
import pytest

from conftest import ROOT, free_port
from tap_helpers import RunningTap, upstream  # noqa: F401 - upstream is a fixture

KEY = "sk-fault-secret-abcdefghijkl"


@pytest.fixture(scope="module")
def tap(upstream, tmp_path_factory):
    running = RunningTap(upstream.url, tmp_path_factory.mktemp("fault-sessions"), max_body=12 * 1024 * 1024)
    yield running
    running.stop()


def chat(text: str = "hi", **extra) -> dict:
    return {"model": "loop-model", "messages": [{"role": "user", "content": text}], **extra}


def test_headers_query_and_body_go_upstream_unchanged_and_the_answer_comes_back(tap, upstream):
    body = json.dumps(chat("echo me", temperature=0.5)).encode()
    answer = httpx.post(f"{tap.url}/echo/v1/chat/completions?api-version=2024-01&x=%2F", content=body, headers={
        "Authorization": f"Bearer {KEY}", "X-Api-Key": KEY, "X-Custom": "kept", "Content-Type": "application/json"})
    seen = answer.json()
    assert answer.status_code == 200 and seen["method"] == "POST"
    assert seen["path"] == "/echo/v1/chat/completions?api-version=2024-01&x=%2F"
    assert seen["sha256"] == hashlib.sha256(body).hexdigest()
    headers = {k.lower(): v for k, v in seen["headers"]}
    assert headers["authorization"] == f"Bearer {KEY}" and headers["x-api-key"] == KEY
    sent = {k.lower(): v for k, v in answer.request.headers.items() if k.lower() not in ("host", "connection")}
    hop = headers.pop("x-ctxpane-tap")  # the one header added: the tap's hop mark (tui/tap/hops.py)
    assert hop == tap.tap.server.tap_id
    assert {k: v for k, v in headers.items() if k != "host"} == sent  # every other header, as sent
    assert answer.headers["x-upstream"] == "loop" and answer.headers["set-cookie"] == "upstream-session=abc"
    tap.settle()
    recorded = "".join(p.read_text() for p in tap.folder.iterdir())
    assert recorded and KEY not in recorded and "Bearer" not in recorded  # recorded, and no key in it


def test_a_ten_megabyte_body_passes_and_one_over_the_limit_gets_413(tap):
    big = json.dumps(chat("x" * (10 * 1024 * 1024))).encode()
    answer = httpx.post(f"{tap.url}/echo/v1/chat/completions", content=big, timeout=60)
    assert answer.status_code == 200 and answer.json()["length"] == len(big)
    assert answer.json()["sha256"] == hashlib.sha256(big).hexdigest()
    too_big = httpx.post(f"{tap.url}/echo/v1/chat/completions", content=b"y" * (13 * 1024 * 1024), timeout=60)
    assert too_big.status_code == 413
    assert "over the tap's limit of 12,582,912 bytes" in too_big.json()["error"]["message"]

    def chunked():  # no Content-Length: refused once it passes the limit, all the same
        for _ in range(14):
            yield b"z" * (1024 * 1024)
    refused = httpx.post(f"{tap.url}/echo/v1/chat/completions", content=chunked(), timeout=60)
    assert refused.status_code == 413
    assert httpx.get(f"{tap.url}/echo/v1/models").status_code == 200  # the tap goes on


def test_an_upstream_that_is_down_is_a_clear_502(tmp_path):
    down = RunningTap(f"http://127.0.0.1:{free_port()}/v1", tmp_path)
    try:
        sdk = openai.OpenAI(base_url=down.url, api_key=KEY, max_retries=0)
        with pytest.raises(openai.APIStatusError) as caught:
            sdk.chat.completions.create(**chat())
        assert caught.value.status_code == 502
        assert "could not be reached" in caught.value.message and "ConnectError" in caught.value.message
        down.settle()
        (tapped,) = down.recorder.tapped.values()
        assert tapped.record.reply["incomplete"] and "could not be reached" in tapped.record.reply["error"]
        (path,) = tmp_path.glob("*.ctxpane.json")  # the request is on record, and replays though no reply came
        check = subprocess.run([sys.executable, "-m", "tui", "replay", "--check", str(path)], capture_output=True,
                               text=True, cwd=str(ROOT), timeout=60)
        assert check.returncode == 0 and "reply incomplete" in check.stdout, check.stdout + check.stderr
    finally:
        down.stop()


def test_an_upstream_cut_mid_stream_reaches_the_client_as_a_cut_and_is_recorded(tap):
    body = json.dumps(chat("cut me", stream=True))
    result = subprocess.run(["curl", "-sN", f"{tap.url}/cut/v1/chat/completions", "-d", body], capture_output=True,
                            timeout=30)
    assert result.returncode != 0  # curl saw the transfer end before its end (as from the upstream itself)
    assert b"partial " in result.stdout and b"[DONE]" not in result.stdout
    tap.settle()
    tapped = tap.recorder.tapped[max(tap.recorder.tapped)]
    assert tapped.record.reply["content"] == "partial reply " and tapped.record.reply["incomplete"]
    assert "broke off" in tapped.record.reply["error"]


def test_a_client_that_leaves_mid_stream_cancels_the_upstream_request(tap, upstream):
    upstream.loop.run(_clear(upstream))
    with httpx.stream("POST", f"{tap.url}/slow/v1/chat/completions", json=chat("slow", stream=True)) as response:
        lines = response.iter_lines()
        assert [next(lines) for _ in range(4)][0].startswith("data: ")
    assert upstream.client_left(timeout=5)
    tap.settle()
    tapped = tap.recorder.tapped[max(tap.recorder.tapped)]
    assert tapped.exchange.client_gone and tapped.record.reply["incomplete"]


async def _clear(upstream) -> None:
    upstream.left.clear()


def test_two_clients_streaming_at_once_each_get_their_own_reply(tap):
    results: dict[str, str] = {}

    def stream(name: str) -> None:
        sdk = openai.OpenAI(base_url=f"{tap.url}/slow/v1", api_key=KEY, max_retries=0)
        pieces = sdk.chat.completions.create(**chat(name, stream=True), extra_query={"n": "12"})
        results[name] = "".join(c.choices[0].delta.content or "" for c in pieces if c.choices)

    threads = [threading.Thread(target=stream, args=(name,)) for name in ("first", "second")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert results == {name: "".join(f"{n} " for n in range(12)) for name in ("first", "second")}
    tap.settle()
    recorded = [t for t in tap.recorder.tapped.values() if t.record and t.record.body["messages"][0]["content"]
                in ("first", "second")]
    assert len(recorded) == 2 and len({t.conversation for t in recorded}) == 2
    one, two = (t.exchange for t in recorded)  # each took 0.6 s or more: both were in flight at once
    assert one.started < two.ended and two.started < one.ended
    assert all(t.record.reply["stream"]["chunks"] >= 12 for t in recorded)


def test_the_headless_command_prints_each_request_and_warns_off_loopback(upstream, tmp_path):
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "tui", "tap", "--upstream", upstream.url + "/ok", "--host",
                                "0.0.0.0", "--port", str(port), "--no-ui", "--session-dir", str(tmp_path)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(ROOT),
                               env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        first = process.stdout.readline()
        assert f"listening on http://0.0.0.0:{port}/ok" in first
        reply = httpx.post(f"http://127.0.0.1:{port}/ok/v1/chat/completions", json=chat("cli", stream=True),
                           headers={"Authorization": f"Bearer {KEY}"})
        assert reply.text.endswith("data: [DONE]\n\n")
        line = process.stdout.readline()
        assert "#1 POST /ok/v1/chat/completions -> 200" in line and "conversation 1 step 1" in line
    finally:
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    assert process.returncode == 0
    assert "warning: listening on 0.0.0.0, not only on this machine" in err
    assert KEY not in out + err and all(KEY not in p.read_text() for p in tmp_path.iterdir())


def test_bodies_that_cannot_be_recorded_still_go_through_and_say_so(tap):
    odd = [json.dumps({"model": "m", "messages": [{"role": "wizard", "content": "x"}]}).encode(),
           b"\xff\xfe not json \x00", json.dumps({"model": "m", "messages": [{"role": "user", "content": 5}]}).encode(),
           json.dumps({"model": "m", "messages": "nope"}).encode()]
    for body in odd:
        answer = httpx.post(f"{tap.url}/echo/v1/chat/completions", content=body)
        assert answer.status_code == 200 and answer.json()["sha256"] == hashlib.sha256(body).hexdigest()
    tap.settle()
    latest = [tap.recorder.tapped[n] for n in sorted(tap.recorder.tapped)[-4:]]
    assert all(t.record is None and t.problem for t in latest)
    assert latest[0].problem.startswith("not recorded") and "passed through" in latest[1].problem
    ok = httpx.post(f"{tap.url}/ok/v1/chat/completions", json=chat("after the odd ones", stream=True))
    assert ok.status_code == 200
    tap.settle()
    assert tap.recorder.tapped[max(tap.recorder.tapped)].record.reply["content"] == "one two three"


def test_memory_stays_bounded_over_many_requests(tap, monkeypatch):
    import tui.tap.keeping as keeping
    import tui.tap.recorder as recorder
    monkeypatch.setattr(keeping, "KEEP_VIEWS", 3)
    monkeypatch.setattr(recorder, "KEEP_BYTES_OF", 2)
    history = [{"role": "user", "content": "bounded"}]
    for turn in range(6):
        httpx.post(f"{tap.url}/ok/v1/chat/completions", json={"model": "loop-model", "messages": history,
                                                               "stream": True}).raise_for_status()
        history += [{"role": "assistant", "content": "one two three"}, {"role": "user", "content": f"t{turn}"}]
    tap.settle()
    ours = [t for t in tap.recorder.tapped.values() if t.record and t.record.body["messages"][0]["content"] ==
            "bounded"]
    assert len(ours) == 6 and len({t.conversation for t in ours}) == 1
    assert [t.view is not None for t in ours] == [False] * 3 + [True] * 3
    assert sum(1 for t in tap.recorder.tapped.values() if t.exchange.chunks or t.exchange.body) <= 2
    views = tap.recorder.threads[ours[0].conversation].replayer._views
    assert sorted(views) == [4, 5]
    assert all(t.record.reply["content"] == "one two three" for t in ours)  # every request is on record whole


def test_a_compressed_reply_and_a_large_curl_upload_pass_unchanged(tap, tmp_path):
    answer = httpx.post(f"{tap.url}/gz/v1/chat/completions", json=chat("squeeze"),
                        headers={"Accept-Encoding": "gzip"})
    assert answer.headers["content-encoding"] == "gzip" and answer.json()["choices"][0]["message"]["content"] \
        == "squeezed " * 50
    tap.settle()
    assert tap.recorder.tapped[max(tap.recorder.tapped)].record.reply["content"] == "squeezed " * 50
    body = tmp_path / "body.json"
    body.write_text(json.dumps(chat("u" * 3_000_000)))  # curl says `Expect: 100-continue` for a body this big
    result = subprocess.run(["curl", "-s", f"{tap.url}/echo/v1/chat/completions", "-H",
                             "Content-Type: application/json", "--data-binary", f"@{body}"],
                            capture_output=True, timeout=60)
    seen = json.loads(result.stdout)
    assert seen["sha256"] == hashlib.sha256(body.read_bytes()).hexdigest()
    assert "expect" not in {k.lower() for k, _ in seen["headers"]}


def test_when_recording_fails_the_traffic_still_flows(upstream, tmp_path):
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the sessions folder should be")
    broken = RunningTap(upstream.url, blocked / "sessions")
    try:
        for turn in range(3):
            answer = httpx.post(f"{broken.url}/ok/v1/chat/completions", json=chat(f"still flows {turn}", stream=True))
            assert answer.status_code == 200 and answer.text.endswith("data: [DONE]\n\n")
        broken.settle()
        assert broken.recorder.failures >= 1
        assert any("not recorded" in t.problem for t in broken.recorder.tapped.values())
    finally:
        broken.stop()


async def test_text_from_the_client_reaches_the_list_only_cleaned(upstream, tmp_path):
    from app_helpers import plain
    from textual.widgets import OptionList

    from tap_helpers import ended_and_listed, listening
    from tui.app.tap_app import TapApp

    app = TapApp(upstream.url, tmp_path, port=0)
    async with app.run_test(size=(140, 30)) as pilot:
        await listening(pilot, app)
        async with httpx.AsyncClient() as http:
            answer = await http.post(f"{app.url}/ok/v1/chat/completions", json={
                "model": "evil\x1b[2J\x1b]0;title\x07\u202emodel", "stream": True,
                "messages": [{"role": "user", "content": "hi\x1b[31m"}]})
        assert answer.status_code == 200
        listing = app.query_one("#tap-list", OptionList)
        await ended_and_listed(pilot, app, 1)
        label = plain(listing.get_option_at_index(0).prompt)
        assert "evil" in label and "\x1b" not in label and "\x07" not in label and "\u202e" not in label
        app.save_screenshot(str(tmp_path / "shot.svg"))
        assert "\x1b" not in (tmp_path / "shot.svg").read_text()


def test_the_command_refuses_what_it_cannot_use(cli_in_process):
    for args, said in ((["--upstream", "http://127.0.0.1:8089/v1"], "the tap's own address"),
                       (["--upstream", "http://localhost:9000/v1", "--port", "9000"], "the tap's own address"),
                       (["--upstream", "ftp://example.com"], "http(s) URL"),
                       (["--upstream", "http://user:pw@example.com/v1"], "must not hold a user"),
                       (["--upstream", "http://127.0.0.1:1/v1", "--max-body", "12"], "--max-body")):
        result = cli_in_process("tap", *args, "--no-ui")
        assert result.returncode == 2 and said in result.stderr, (args, result.stderr)
        assert result.stderr.count("\n") == 1


def test_a_busy_conversation_is_written_a_few_times_not_once_a_request(tap, monkeypatch):
    from tui.sessions.log_writer import LogWriter
    writes = []
    real = LogWriter.append
    monkeypatch.setattr(LogWriter, "append", lambda self, *a, **k: (writes.append(self.path), real(self, *a, **k))[1])
    history = [{"role": "user", "content": "busy"}]
    for turn in range(12):
        httpx.post(f"{tap.url}/ok/v1/chat/completions", json={"model": "loop-model", "messages": history,
                                                               "stream": True}).raise_for_status()
        history += [{"role": "assistant", "content": "one two three"}, {"role": "user", "content": f"b{turn}"}]
    tap.settle()
    path = tap.recorder.threads[tap.recorder.tapped[max(tap.recorder.tapped)].conversation].path
    assert 1 <= writes.count(path) < 12
    from tui.sessions.store import load_session
    assert len(load_session(path).session.requests) == 12  # the last write holds every request


def test_an_upstream_that_says_nothing_gets_no_system_turn_the_client_did_not_send():
    """Down (nothing listens on the port): the family's template for a known model, else plain ChatML with no
    default system prompt; counts are estimates."""
    from conftest import free_port
    from tui.tap.engine import learn_engine
    down = f"http://127.0.0.1:{free_port()}/v1"
    for model, name in (("gpt-4o", "openai"), ("mystery-model", "chatml"), ("Qwen/Qwen3-8B", "qwen3")):
        engine = learn_engine(down, model)
        text = engine.template.render([{"role": "user", "content": "hi"}], add_generation_prompt=True)
        assert engine.template.name == name and "<|im_start|>system" not in text and "You are Qwen" not in text
        assert not engine.exact and "estimates" in engine.note


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
def test_a_compressed_request_body_goes_upstream_as_sent_and_is_recorded_decoded(tap, upstream, encoding):
    """The pass-through changes nothing: the upstream gets the compressed bytes under their own label (the tap's
    server decompressed them before and sent the plain body still labelled gzip)."""
    import gzip
    import zlib
    plain = json.dumps(chat(f"a {encoding} question")).encode()
    raw = gzip.compress(plain) if encoding == "gzip" else zlib.compress(plain)
    answer = httpx.post(f"{tap.url}/ok/v1/chat/completions", content=raw,
                        headers={"Content-Encoding": encoding, "Content-Type": "application/json"})
    assert answer.status_code == 200
    seen = upstream.seen[-1]
    assert seen["body"] == raw and dict((k.lower(), v) for k, v in seen["headers"])["content-encoding"] == encoding
    tap.settle()
    record = tap.recorder.tapped[max(tap.recorder.tapped)].record
    assert record is not None and record.body["messages"][-1]["content"] == f"a {encoding} question"


def test_a_compression_bomb_in_a_request_body_is_forwarded_and_not_unpacked_past_the_limit(tap, upstream):
    import gzip
    raw = gzip.compress(b'{"model": "m", "messages": [{"role": "user", "content": "' + b"a" * 80_000_000 + b'"}]}')
    answer = httpx.post(f"{tap.url}/ok/v1/chat/completions", content=raw,
                        headers={"Content-Encoding": "gzip", "Content-Type": "application/json"}, timeout=60)
    assert answer.status_code == 200 and upstream.seen[-1]["body"] == raw
    tap.settle()
    tapped = tap.recorder.tapped[max(tap.recorder.tapped)]
    assert tapped.record is None and "unpacks past" in tapped.problem
