"""Through the tap, a Messages or Responses upstream that says a usage figure of 2**63 or more (issue 41, item 2):
the figure is kept in the session file as text, with a note, and the file opens again (it was refused whole)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from tap_helpers import RunningTap, whole_reply
from tui.sessions.store import load_session

HUGE = 2 ** 63 + 7


class _Huge(BaseHTTPRequestHandler):
    """A whole reply of the format the path names, its usage past 2**63."""

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers.get("content-length") or 0))
        reply = whole_reply(self.path, "fine")
        reply["usage"] = {**reply["usage"], "input_tokens": HUGE, "output_tokens": -HUGE}
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def huge_upstream():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Huge)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.mark.parametrize("api", ["messages", "responses"])
def test_a_usage_figure_past_2_63_is_kept_as_text_and_the_file_opens(huge_upstream, tmp_path, api):
    tap = RunningTap(huge_upstream, tmp_path)
    try:
        body = {"model": "loop-model", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]} \
            if api == "messages" else {"model": "loop-model", "input": "hi"}
        answer = httpx.post(f"{tap.url}/v1/{api}", json=body, headers={"x-api-key": "sk-huge-usage-abcdefgh"},
                            timeout=20)
        assert answer.status_code == 200 and answer.json()["usage"]["input_tokens"] == HUGE  # forwarded as sent
        tap.settle()
        tap.recorder.drain()
        (thread,) = tap.recorder.threads.values()
        opened = load_session(thread.path)
    finally:
        tap.stop()
    (record,) = opened.session.requests
    assert record.reply["provider_usage"]["input_tokens"] == str(HUGE)
    assert record.reply["provider_usage"]["output_tokens"] == str(-HUGE)
    assert "kept as text" in opened.note and any("input_tokens" in note for note in record.bounded)
