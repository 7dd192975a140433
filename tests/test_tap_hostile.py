"""The tap against hostile clients and upstreams: what a proxy must never add, keep or show.

Found by review: cookies the upstream set were kept by the tap's own HTTP client and sent on every later
request of every client; keys in a query string reached the request list and the headless lines.
"""

from __future__ import annotations


import json

import httpx
import pytest

from tap_helpers import RunningTap, upstream  # noqa: F401 - upstream is a fixture
from test_redaction import outside_words
from session_files import session_data
from waiting import eventually, until


@pytest.fixture(scope="module")
def tap(upstream, tmp_path_factory):
    running = RunningTap(upstream.url, tmp_path_factory.mktemp("hostile-sessions"))
    yield running
    running.stop()


def test_a_cookie_the_upstream_sets_is_never_sent_on_by_the_tap(tap):
    first = httpx.get(f"{tap.url}/echo/one")  # the upstream answers with Set-Cookie: upstream-session=abc
    assert first.status_code == 200 and first.headers["set-cookie"] == "upstream-session=abc"
    # another client (no cookie of its own) and the same one: the upstream sees only what each sent
    for _ in range(2):
        seen = httpx.get(f"{tap.url}/echo/two").json()
        assert not [k for k, _v in seen["headers"] if k.lower() == "cookie"], seen["headers"]
    own = httpx.get(f"{tap.url}/echo/three", headers={"Cookie": "mine=1"}).json()
    assert [v for k, v in own["headers"] if k.lower() == "cookie"] == ["mine=1"]


def test_a_key_in_the_query_string_goes_upstream_but_is_never_shown_or_kept(tap, upstream):
    secret, google = "azure-query-secret-0123456789", "AIzaQuerySecret+/987654"
    events = len(tap.events)
    answer = httpx.post(f"{tap.url}/ok/v1/chat/completions", params={"api-version": "2024-01", "api-key": secret,
                        "key": google}, json={"model": "loop-model", "messages": [
                            {"role": "user", "content": f"say {secret}"}], "stream": True})
    assert answer.status_code == 200 and "data: [DONE]" in answer.text
    assert secret in upstream.seen[-1]["path"]  # forwarded as sent
    assert upstream.seen[-1]["path"] == answer.request.url.raw_path.decode()
    tap.settle()
    number = max(n for _kind, n in tap.events[events:])
    shown = tap.recorder.tapped[number].exchange.path
    assert shown == "/ok/v1/chat/completions?api-version=2024-01&api-key=***&key=***"
    recorded = [session_data(p) for p in tap.folder.glob("*.ctxpane.json")]
    mine = [data for data in recorded if data["messages"][0]["content"] == f"say {secret}"]  # its words, kept
    assert mine and not any(secret in outside_words(data) or "AIzaQuerySecret" in outside_words(data)
                            for data in recorded)


def test_an_upstream_url_that_does_not_parse_is_a_usage_error_not_a_traceback(cli_in_process):
    for url in ("http://127.0.0.1:abc/v1", "http://[::1/v1", "http://127.0.0.1:99999/v1", "http://@127.0.0.1:1/v1"):
        result = cli_in_process("tap", "--upstream", url, "--no-ui")
        assert result.returncode == 2 and "--upstream" in result.stderr, (url, result.stderr)
        assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_a_long_reply_in_many_pieces_is_recorded_in_time_with_its_ends_and_the_cut_said(tap):
    """12 MB of content in 12,000 chunks (joined piece by piece it took ~15 s): forwarded whole, recorded with its
    first and last MiB and what was cut, matched whole when the client sends it back, and the file opens."""
    from tui.tap.replies import TEXT_END_KEPT
    pieces, size = 12000, 1000
    history = [{"role": "user", "content": "flood"}]
    with httpx.stream("POST", f"{tap.url}/flood/v1/chat/completions", params={"n": pieces, "size": size},
                      json={"model": "loop-model", "messages": history, "stream": True}, timeout=60) as answer:
        got = sum(len(chunk) for chunk in answer.iter_raw())
    assert answer.status_code == 200 and got > pieces * size
    tap.settle(60)  # joined piece by piece (quadratic) this took ~15 s and the test's timeout caught it
    tapped = tap.recorder.tapped[max(tap.recorder.tapped)]
    record = tapped.record
    assert record is not None and not record.reply["incomplete"]
    assert record.reply["cut"] == {"characters": pieces * size - 2 * TEXT_END_KEPT,
                                   "fields": {"content": pieces * size - 2 * TEXT_END_KEPT},
                                   "kept": f"the first and last {TEXT_END_KEPT:,} characters"}
    content = record.reply["content"]
    assert content.startswith("w" * TEXT_END_KEPT + "\n[… ") and content.endswith("…]\n" + "w" * TEXT_END_KEPT)
    history += [{"role": "assistant", "content": "w" * (pieces * size)}, {"role": "user", "content": "shorter"}]
    assert httpx.post(f"{tap.url}/ok/v1/chat/completions", json={"model": "loop-model", "messages": history},
                      timeout=60).status_code == 200
    tap.settle(60)
    later = tap.recorder.tapped[max(tap.recorder.tapped)]
    assert later.conversation == tapped.conversation and later.record.dropped == []
    path = tap.recorder.threads[tapped.conversation].path
    tap.recorder.drain()
    saved = session_data(path)
    assert [m["role"] for m in saved["messages"]] == ["user", "assistant", "user", "assistant"]
    assert saved["requests"][0]["reply"]["cut"]["characters"] == pieces * size - 2 * TEXT_END_KEPT
    # (the second request's body, which holds the whole reply as the client sent it back, is kept as sent)


def test_a_conversation_of_many_long_replies_keeps_less_of_each_past_its_budget_and_its_file_opens(tap,
                                                                                                    monkeypatch):
    import tui.tap.recorder as recorder
    monkeypatch.setattr(recorder, "TEXT_END_KEPT", 2_000)
    monkeypatch.setattr(recorder, "TEXT_END_KEPT_LATE", 100)
    monkeypatch.setattr(recorder, "TEXT_BUDGET", 20_000)
    history = [{"role": "user", "content": "budget"}]
    for _turn in range(8):
        httpx.post(f"{tap.url}/flood/v1/chat/completions", params={"n": 10, "size": 1000},
                   json={"model": "loop-model", "messages": history, "stream": True}, timeout=60).raise_for_status()
        tap.settle()
        history += [{"role": "assistant", "content": "w" * 10_000}, {"role": "user", "content": "more"}]
    tapped = tap.recorder.tapped[max(tap.recorder.tapped)]
    thread = tap.recorder.threads[tapped.conversation]
    kept = [r.reply["cut"]["kept"] for r in thread.session.requests]
    assert kept[:5] == ["the first and last 2,000 characters"] * 5 and kept[5:] == ["the first and last 100 characters"] * 3
    tap.recorder.drain()
    assert len(session_data(thread.path)["requests"]) == 8


def test_an_upstream_header_or_reason_with_a_control_character_is_left_out_and_the_answer_still_comes(tap_for_raw):
    answer = httpx.post(f"{tap_for_raw.url}/v1/chat/completions", json={"model": "m", "messages": [
        {"role": "user", "content": "hi"}]})
    assert answer.status_code == 200 and answer.json()["choices"][0]["message"]["content"] == "fine"
    assert "x-evil" not in answer.headers and answer.headers["x-good"] == "kept"


RAW_REPLY = b'{"id":"r","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant",' \
            b'"content":"fine"},"finish_reason":"stop"}]}'


@pytest.fixture(scope="module")
def tap_for_raw(tmp_path_factory):
    """A tap in front of an upstream that writes its answer by hand (what aiohttp would never send)."""
    import asyncio

    from tap_helpers import LoopThread

    async def answer(reader, writer):
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 O\x1bK\r\nContent-Type: application/json\r\nX-Evil: a\x1b]0;title\x07b\r\n"
                     b"X-Good: kept\r\nContent-Length: %d\r\n\r\n%s" % (len(RAW_REPLY), RAW_REPLY))
        await writer.drain()
        writer.close()

    loop = LoopThread()
    server = loop.run(asyncio.start_server(answer, "127.0.0.1", 0))
    port = server.sockets[0].getsockname()[1]
    running = RunningTap(f"http://127.0.0.1:{port}", tmp_path_factory.mktemp("raw-sessions"))
    yield running
    running.stop()
    server.close()
    loop.stop()


def test_a_session_dir_that_cannot_hold_files_is_refused_before_listening(cli_in_process, tmp_path):
    import os
    fifo, plain = tmp_path / "fifo", tmp_path / "file"
    os.mkfifo(fifo)
    plain.write_text("x")
    for folder in (fifo, plain, plain / "below"):
        result = cli_in_process("tap", "--upstream", "http://127.0.0.1:1/v1", "--no-ui", "--port", "0",
                                "--session-dir", str(folder))
        assert result.returncode == 2 and "--session-dir" in result.stderr, (folder, result.stderr)
        assert "listening" not in result.stdout and result.stderr.count("\n") == 1


def test_the_path_and_query_reach_the_upstream_byte_for_byte(tap, upstream):
    import socket
    from urllib.parse import urlsplit
    raw = '/echo/a/./b/../c%zz/x|y^z?q={"a":1}&r=%2F&s=a+b&t=[1]'
    where = urlsplit(tap.url)
    with socket.create_connection((where.hostname, where.port), timeout=10) as conn:
        conn.sendall(f"GET {raw} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 200")
    assert upstream.seen[-1]["path"] == raw


def test_a_key_in_the_request_body_is_forwarded_but_not_kept_in_the_session_file(tap, upstream):
    secret = "sk-body-secret-0123456789abcdef"
    answer = httpx.post(f"{tap.url}/ok/v1/chat/completions", json={
        "model": "loop-model", "api_key": secret, "messages": [{"role": "user", "content": "a key in my body"}],
        "stream": True})
    assert answer.status_code == 200 and "data: [DONE]" in answer.text
    assert secret.encode() in upstream.seen[-1]["body"]  # forwarded unchanged
    tap.settle()
    files = [p.read_text() for p in tap.folder.glob("*.ctxpane.json")]
    assert any("a key in my body" in text for text in files)
    assert not any(secret in text for text in files)


def test_header_values_that_are_not_ascii_go_upstream_byte_for_byte(tap, upstream):
    title = "Café agent ‮ 日本".encode()
    answer = httpx.get(f"{tap.url}/echo/utf8", headers={"User-Agent": title, "X-Title": title,
                                                       "X-Latin": b"caf\xe9"})
    assert answer.status_code == 200
    seen = upstream.seen[-1]["headers"]
    assert ("X-Title", title.decode()) in seen and ("User-Agent", title.decode()) in seen
    assert [k for k, _v in seen if k == "X-Latin"]


def test_the_headless_command_says_each_request_once_even_when_it_cannot_be_recorded(upstream, tmp_path):
    import json

    from tap_helpers import LoopThread
    from tui.commands.tap import request_line
    from tui.tap.runner import Tap

    lines: list[str] = []
    loop = LoopThread()
    tap = Tap(upstream.url, tmp_path, port=0, on_change=lambda kind, t: lines.append(request_line(kind, t) or ""))
    url = loop.run(tap.start())
    try:
        for body in ({"model": "m", "messages": [1, 2]},
                     {"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": True}):
            answer = httpx.post(f"{url}/ok/v1/chat/completions", content=json.dumps(body))
            assert answer.status_code == 200
        until(lambda: not tap.server.active, 30, "both requests to end", poll=0.01)
        tap.recorder.drain()
    finally:
        loop.run(tap.close())
        loop.stop()
    said = [line for line in lines if line]
    assert [line.split(" ")[0] for line in said] == ["#1", "#2"], said
    assert "not recorded" in said[0] and "-> 200" in said[0]


async def test_the_apps_request_tab_shows_a_key_in_the_body_as_stars(upstream, tmp_path):
    from tap_helpers import ended_and_listed, listening
    from tui.app.pane.pane import ContextPane
    from tui.app.pane.request_tab import RequestView
    from tui.app.tap_app import TapApp

    secret = "sk-shown-body-secret-0123456789"
    app = TapApp(upstream.url, tmp_path, port=0)
    async with app.run_test(size=(160, 40)) as pilot:
        await listening(pilot, app)
        async with httpx.AsyncClient() as http:
            answer = await http.post(f"{app.url}/ok/v1/chat/completions", json={
                "model": "m", "api_key": secret, "stream": True, "messages": [{"role": "user", "content": "hi"}]})
        assert answer.status_code == 200
        await ended_and_listed(pilot, app, 1)
        pane = app.query_one(ContextPane)
        pane.query_one("#tabs").active = "request"
        await eventually(lambda: pane.query(RequestView) and '"model"' in pane.query_one(RequestView).text,
                         pilot=pilot, what="the request tab to show the body")
        shown = pane.query_one(RequestView).text
        assert '"api_key": "***"' in shown and secret not in shown


def test_the_bytes_of_finished_replies_held_in_memory_are_bounded_in_total(tap, monkeypatch):
    import tui.tap.recorder as recorder
    monkeypatch.setattr(recorder, "KEEP_BYTES_TOTAL", 300_000, raising=False)
    for _ in range(4):  # four replies of ~200 KB: the bytes of the latest one only stay in memory
        answer = httpx.post(f"{tap.url}/flood/v1/chat/completions", params={"n": 100, "size": 2000}, json={
            "model": "loop-model", "messages": [{"role": "user", "content": "bounded bytes"}], "stream": True})
        assert answer.status_code == 200 and len(answer.content) > 200_000
    tap.settle()
    held = [e for e in tap.recorder.finished if e.chunks or e.body]
    assert sum(e.kept_bytes + len(e.body) for e in held) <= 300_000 and len(held) == 1
    ours = [t for t in tap.recorder.tapped.values() if t.record and t.record.body["messages"][0]["content"] ==
            "bounded bytes"]
    assert len(ours) == 4 and all(len(t.record.reply["content"]) == 200_000 for t in ours)  # all on record


def test_a_key_stays_redacted_in_its_file_however_many_other_keys_come_through(tap):
    key = "sk-first-conversation-key-0123456789"
    history = [{"role": "user", "content": "first conversation"}]

    def send(scenario, messages, auth):
        answer = httpx.post(f"{tap.url}/{scenario}/v1/chat/completions", headers={"Authorization": f"Bearer {auth}"},
                            json={"model": "loop-model", "messages": messages, "stream": True})
        assert answer.status_code == 200

    send("ok", history, key)
    for n in range(30):  # other clients, other keys (each file redacts its own: no list to push a key out of)
        send("ok", [{"role": "user", "content": f"other {n}"}], f"sk-other-key-{n:04d}-abcdefgh")
    tap.settle()
    history += [{"role": "assistant", "content": "one two three"}, {"role": "user", "content": "again"}]
    send("echokey", history, key)  # the first conversation goes on, and the upstream quotes the key back
    tap.settle()
    files = [p.read_text() for p in tap.folder.glob("*.ctxpane.json")]
    assert any("again" in text and "refused, you sent" in text for text in files)
    assert not any(key in text for text in files), "key in clear"


def test_a_client_that_leaves_before_the_upstream_answers_cancels_it_and_is_recorded_so(tap, upstream):
    upstream.loop.run(_reset(upstream))
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(f"{tap.url}/late/v1/chat/completions", timeout=httpx.Timeout(5, read=0.5), json={
            "model": "loop-model", "messages": [{"role": "user", "content": "never answered"}], "stream": True})
    assert upstream.client_left(10)  # the upstream request was cancelled with the client
    tap.settle()
    tapped = tap.recorder.tapped[max(tap.recorder.tapped)]
    assert tapped.exchange.client_gone and "client went away" in tapped.exchange.error
    assert tapped.record is not None and "client went away" in tapped.record.reply["error"]


async def _reset(upstream) -> None:
    upstream.left.clear()


def test_a_client_that_stalls_mid_body_gets_408_and_blocks_no_one(upstream, tmp_path):
    import socket
    import time

    from tap_helpers import LoopThread
    from tui.tap.server import TapServer

    loop = LoopThread()
    server = TapServer(upstream.url, port=0, read_timeout=0.5)
    url = loop.run(server.start())
    try:
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as stalled:
            stalled.sendall(b"POST /echo/v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
            started = time.monotonic()
            assert httpx.get(f"{url}/echo/meanwhile").status_code == 200  # others go on
            answer = stalled.recv(4096)
            assert answer.startswith(b"HTTP/1.1 408") and b"stopped arriving" in answer
            assert time.monotonic() - started < 5
    finally:
        loop.run(server.close())
        loop.stop()


def test_the_tap_refuses_its_own_address_however_it_is_written(cli_in_process):
    """Issue 26: 127.1, 0.0.0.0, localhost. and ::ffff:127.0.0.1 got past the check, and one request then
    looped until file descriptors ran out."""
    from tui.commands.tap import forwards_to_itself
    for target in ("http://127.1:8089/v1", "http://0.0.0.0:8089", "http://localhost.:8089",
                     "http://[::ffff:127.0.0.1]:8089", "http://2130706433:8089", "http://x.localhost:8089"):
        assert forwards_to_itself(target, "127.0.0.1", 8089), target
    assert not forwards_to_itself("http://127.0.0.1:8090", "127.0.0.1", 8089)
    assert not forwards_to_itself("http://face.cafe:8089", "127.0.0.1", 8089)
    result = cli_in_process("tap", "--upstream", "http://127.1:18123/v1", "--port", "18123", "--no-ui")
    assert result.returncode == 2 and "own address" in result.stderr


def test_an_upstreams_header_bytes_reach_the_client_as_sent_or_are_left_out_and_said(tmp_path):
    """UTF-8 header values come back byte for byte (they were decoded as Latin-1 when another value was not UTF-8,
    and sent on encoded twice); bytes no UTF-8 reading holds cannot be written as they are: left out, and said."""
    import http.client
    import logging
    import socket
    import threading

    from tui.tap.server import log as server_log

    answer = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Utf8: caf\xc3\xa9 \xe6\x97\xa5\r\n"
              b"X-Latin: caf\xe9\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        for _ in range(1):
            connection, _address = listener.accept()
            with connection:
                connection.recv(65536)
                connection.sendall(answer)
    threading.Thread(target=serve, daemon=True).start()
    said: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: said.append(record.getMessage())  # type: ignore[method-assign]
    logging.getLogger(server_log.name).addHandler(handler)  # (another test's logging set-up may stop propagation)
    tap = RunningTap(f"http://127.0.0.1:{listener.getsockname()[1]}", tmp_path)
    try:
        host, port = tap.url.removeprefix("http://").split("/")[0].split(":")
        client = http.client.HTTPConnection(host, int(port), timeout=30)
        client.request("GET", "/v1/models")
        reply = client.getresponse()
        assert reply.read() == b"{}"
        assert reply.getheader("X-Utf8").encode("latin-1") == b"caf\xc3\xa9 \xe6\x97\xa5"
        assert reply.getheader("X-Latin") is None
        assert any("X-Latin" in line and "not UTF-8" in line for line in said)
    finally:
        logging.getLogger(server_log.name).removeHandler(handler)
        tap.stop()
        listener.close()


@pytest.mark.parametrize("claimed", [10**12, 50_000_000])
def test_a_prompt_count_no_server_could_make_is_never_priced_through_the_tap(tap, claimed):
    """A priced model (gpt-4o), a request of a few tokens, an upstream claiming 10^12 or 5x10^7 prompt tokens: the
    cost is what was sent, and the record says the claim was not used (it was $12.5M at 10^12 before the bound)."""
    answer = httpx.post(f"{tap.url}/usage/v1/chat/completions?prompt={claimed}",
                        json={"model": "gpt-4o", "messages": [{"role": "user", "content": f"count me {claimed}"}]})
    assert answer.status_code == 200 and answer.json()["usage"]["prompt_tokens"] == claimed
    tap.settle()
    record = next(t.record for t in reversed(tap.recorder.tapped.values())
                  if t.record is not None and t.record.body["messages"][0]["content"] == f"count me {claimed}")
    assert record.cost["priced"] and float(record.cost["paid"]) < 0.01, record.cost
    said = json.dumps(record.cost) + json.dumps(record.received)
    assert "not reported" in said and f"{claimed:,}" in said


def test_crafted_images_through_the_tap_are_forwarded_recorded_and_reopened(tap, upstream):
    """Headers that lie about the size, cut short, a PNG that is also HTML and a zip, a GIF labelled PNG, a JPEG of
    endless markers, base64 that is not, a control character in the type: each goes upstream as sent, is recorded,
    and its file opens; the image's tokens are an estimate that says so."""
    import base64

    from image_bytes import gif, png, png_header

    def data(kind: str, raw: bytes) -> str:
        return f"data:image/{kind};base64," + base64.b64encode(raw).decode()
    cases = {"lying": data("png", png_header(10**6, 10**6)), "huge": data("png", png_header(2**32 - 1, 2**32 - 1)),
             "cut": data("png", png(4, 4)[:20]),
             "polyglot": data("png", png(4, 4) + b"<html><script>alert(1)</script>PK\x03\x04" + b"\x00" * 30),
             "gif as png": data("png", gif(65535, 65535)),
             "endless jpeg": data("jpeg", b"\xff\xd8" + b"\xff\xe0\x00\x02" * 50_000),
             "not base64": "data:image/png;base64,@@@@", "control": "data:image/png\x1b[31m;base64,AAAA"}
    for name, url in cases.items():
        body = {"model": "loop-model", "stream": True, "messages": [{"role": "user", "content": [
            {"type": "text", "text": f"image case {name}"}, {"type": "image_url", "image_url": {"url": url}}]}]}
        assert httpx.post(f"{tap.url}/ok/v1/chat/completions", json=body, timeout=60).status_code == 200, name
        assert json.loads(upstream.seen[-1]["body"]) == body, name
    tap.settle()
    recorded = {t.record.body["messages"][0]["content"][0]["text"]: t for t in tap.recorder.tapped.values()
                if t.record is not None and isinstance(t.record.body["messages"][0]["content"], list)}
    for name in cases:
        tapped = recorded[f"image case {name}"]
        assert tapped.view is not None and tapped.view.image_tokens >= 0, name
        path = tap.recorder.threads[tapped.conversation].path
        tap.recorder.drain()
        assert session_data(path)["requests"][0]["body"]["messages"][0]["content"][1]["image_url"]["url"] == \
            cases[name], name
    import subprocess
    import sys

    from conftest import ROOT
    path = tap.recorder.threads[recorded["image case lying"].conversation].path
    checked = subprocess.run([sys.executable, "-m", "tui", "replay", "--check", str(path)], capture_output=True,
                             text=True, cwd=str(ROOT), timeout=120)
    # its image's estimate is part of the stored count and of the fresh one (it was 'drift: tokenizer' before)
    assert checked.returncode == 0 and "drift: none" in checked.stdout, checked.stdout + checked.stderr


def test_long_reasoning_and_tool_call_arguments_are_kept_in_part_too():
    """Eleven turns of 27 MB reasoning made a file the reader refused: only the text was bounded."""
    from types import SimpleNamespace

    from tui.sessions.model import RequestRecord
    from tui.tap.recorder import bounded_reply
    from tui.tap.replies import TEXT_END_KEPT
    calls = [{"id": "c1", "type": "function", "function": {"name": "write", "arguments": "a" * (5 * TEXT_END_KEPT)}}]
    record = RequestRecord(number=1, time="", body={}, reply={"content": "short", "reasoning": "r" * (3 * TEXT_END_KEPT),
                                                              "tool_calls": calls})
    bounded_reply(SimpleNamespace(reply_chars=0), record)
    assert record.reply["content"] == "short"
    assert len(record.reply["reasoning"]) < 2 * TEXT_END_KEPT + 200 and record.reply["reasoning"].startswith("rrr")
    assert len(record.reply["tool_calls"][0]["function"]["arguments"]) < 2 * TEXT_END_KEPT + 200
    assert len(calls[0]["function"]["arguments"]) == 5 * TEXT_END_KEPT  # the reply's own call is left whole
    assert record.reply["cut"]["fields"] == {"reasoning": TEXT_END_KEPT, "tool_calls": 3 * TEXT_END_KEPT}


def test_a_request_the_http_parser_refuses_is_one_line_that_quotes_no_key(tap):
    """aiohttp answers such a request 400 itself and logged a traceback quoting the raw header: the key in it was
    printed on the tap's terminal."""
    import logging
    import socket
    said: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: said.append(handler.format(record))  # type: ignore[method-assign]
    logging.getLogger("aiohttp.server").addHandler(handler)
    try:
        host, port = tap.url.removeprefix("http://").split("/")[0].split(":")
        for raw in (b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer sk-SECRETheader123\x7f\r\n"
                    b"content-length: 2\r\n\r\n{}",
                    b"POST /v1/chat/completions?key=AIzaSECRETquery12345&q=\xc3\xa9 HTTP/1.1\r\nhost: x\r\n\r\n"):
            with socket.create_connection((host, int(port)), timeout=10) as connection:
                connection.sendall(raw)
                assert b" 400 " in connection.recv(100)
        until(lambda: len(said) >= 2, 10, "the parser's two refusals logged")
    finally:
        logging.getLogger("aiohttp.server").removeHandler(handler)
    assert all("SECRET" not in line and "Traceback" not in line and "\n" not in line for line in said), said
    assert all("refused" in line for line in said), said


def test_closed_conversations_keep_no_body_in_memory(upstream, tmp_path, monkeypatch):
    """Every conversation's one request kept its body while the tap ran (the list holds every request): 1,000 new
    conversations of 512 KB took the tap to 2.3 GB. A conversation past the open ones keeps only its figures here."""
    import tui.tap.conversations as conversations
    monkeypatch.setattr(conversations, "MAX_OPEN", 3)
    running = RunningTap(upstream.url, tmp_path / "tapped")
    try:
        for number in range(12):
            body = {"model": "m", "messages": [{"role": "user", "content": f"conversation {number} " + "x" * 50_000}]}
            assert httpx.post(f"{running.url}/ok/v1/chat/completions", json=body, timeout=30).status_code == 200
            running.settle()
        running.recorder.drain()
        holding = [t.exchange.number for t in running.recorder.tapped.values()
                   if t.record is not None and "_body" in t.record.__dict__]
        assert len(holding) <= 5, holding
        oldest = running.recorder.tapped[min(running.recorder.tapped)].record
        assert oldest.body["messages"][0]["content"].startswith("conversation 0 ")  # read again from its file
    finally:
        running.stop()
