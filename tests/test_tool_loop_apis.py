"""A whole tool loop against the real llama.cpp server on each of the app's three APIs (chat completions, Messages,
Responses): the controller -> a recording relay -> ../shared/server/tool-shim.py -> llama-server.

The tiny model never calls tools, so the shim answers the first request that offers tools with a scripted call of a
risky tool; everything else (the reviewer's request, which offers none of the chat's tools, and the turn after the
tool result) goes on to the real server. The relay keeps every request body exactly as it left the controller, and
whether the server answered it. Asserted are shapes only: the model is random, so never which verdict it gives."""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import pytest

from conftest import SHARED, free_port, need_shared
from controller_helpers import connected
from tui.controller.tool_calls import ReviewState
from tui.context.tools.review import Outcome, parse_verdict
from waiting import stopped, until

pytestmark = pytest.mark.server

ARGUMENTS = {"path": "notes/old.txt"}
API_PATHS = {"chat": "/v1/chat/completions", "messages": "/v1/messages", "responses": "/v1/responses"}


class Relay(BaseHTTPRequestHandler):
    """Forwards every request to the shim whole and answers with the shim's whole answer; notes each POST's path,
    body and status."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    def _relay(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        target = urlsplit(self.server.upstream)
        connection = http.client.HTTPConnection(target.hostname, target.port, timeout=120)
        headers = {k: v for k, v in self.headers.items()
                   if k.lower() not in ("host", "content-length", "connection", "accept-encoding")}
        connection.request(self.command, self.path, raw if self.command == "POST" else None, headers)
        answer = connection.getresponse()
        data = answer.read()
        connection.close()
        if self.command == "POST" and self.path.split("?")[0] in API_PATHS.values():
            self.server.seen.append({"path": self.path, "body": json.loads(raw or b"{}"), "status": answer.status,
                                     "answer": data.decode("utf-8", "replace")})
        self.send_response(answer.status)
        self.send_header("Content-Type", answer.getheader("Content-Type") or "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = _relay


class Loop:
    """The shim (its own process, in front of `llama_url`) and the relay in front of it."""

    def __init__(self, llama_url: str, folder) -> None:
        script = SHARED / "server" / "tool-shim.py"
        if not script.exists():
            need_shared("the tool shim is needed")
        self.log = folder / "shim.log"
        port = free_port()
        env = {**os.environ, "SHIM_TOOL": "delete_file", "SHIM_ARGS": json.dumps(ARGUMENTS), "SHIM_CALLS": "1"}
        self.shim = subprocess.Popen([sys.executable, "-u", str(script), str(port), llama_url.removesuffix("/v1")],
                                     env=env, stdout=self.log.open("w"), stderr=subprocess.STDOUT)
        until(lambda: "forwarded" in self._probe(port) or self.shim.poll() is not None, 30, "the shim to listen")
        assert self.shim.poll() is None, self.log.read_text()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Relay)
        self.httpd.daemon_threads = True
        self.httpd.upstream, self.httpd.seen = f"http://127.0.0.1:{port}", []
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def _probe(self, port: int) -> str:
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            connection.request("GET", "/health")
            connection.getresponse().read()
            connection.close()
        except OSError:
            return ""
        return self.log.read_text()

    @property
    def seen(self) -> list[dict]:
        return self.httpd.seen

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        stopped(self.shim)


def tool_file(folder, marker):
    script = "import json, sys; a = json.load(sys.stdin); open(sys.argv[1], 'w').write(a['path']); print('deleted', a['path'])"
    path = folder / "tools.json"
    path.write_text(json.dumps([{"type": "function", "function": {
        "name": "delete_file", "description": "Delete a file",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}},
        "risky": True, "command": [sys.executable, "-c", script, str(marker)]}]))
    return path


def carries_the_result(api: str, body: dict, call_id: str) -> bool:
    """Whether the follow-up `body` (in `api`'s own shape) ends with the tool result answering `call_id`."""
    if api == "chat":
        last = body["messages"][-1]
        return last["role"] == "tool" and last["tool_call_id"] == call_id and "deleted notes/old.txt" in last["content"]
    if api == "messages":
        last = body["messages"][-1]
        parts = [p for p in last["content"] if isinstance(p, dict) and p.get("type") == "tool_result"]
        return (last["role"] == "user" and len(parts) == 1 and parts[0]["tool_use_id"] == call_id
                and "deleted notes/old.txt" in json.dumps(parts[0]["content"]))
    outputs = [i for i in body["input"] if isinstance(i, dict) and i.get("type") == "function_call_output"]
    return (len(outputs) == 1 and outputs[0]["call_id"] == call_id and "deleted notes/old.txt" in outputs[0]["output"]
            and any(i.get("type") == "function_call" and i.get("call_id") == call_id for i in body["input"]))


@pytest.mark.parametrize("api", ["chat", "messages", "responses"])
async def test_a_risky_call_runs_through_review_override_and_result_on_each_api(tmp_path, llama_server, api):
    marker = tmp_path / "ran.txt"
    loop = Loop(llama_server, tmp_path)
    try:
        made = await connected(tmp_path, loop.url, api=api)
        ctl = made.ctl
        assert ctl.client.endpoint.api == api
        assert ctl.tool_calls.load(tool_file(tmp_path, marker))
        await made.send("Please delete notes/old.txt")
        await made.idle()

        # the shim's scripted call arrived, in this API's shape, and waits
        first = loop.seen[0]
        assert first["path"].startswith(API_PATHS[api]) and first["body"].get("tools"), first["path"]
        waiting = ctl.tool_calls.pending()
        assert [(c.name, json.loads(c.arguments)) for c in waiting] == [("delete_file", ARGUMENTS)]
        call = waiting[0]

        # the reviewer's request offered no tool of the chat's, went past the shim to the real server, and its
        # answer is a verdict of the schema (which one is the random model's)
        review = ctl.tool_calls.review_of(call)
        assert review.state is ReviewState.DONE, review
        reviewed = [s for s in loop.seen if s["body"] == review.request.body]
        assert len(reviewed) == 1 and reviewed[0]["status"] == 200, [s["path"] for s in loop.seen]
        assert not any(t.get("function", t).get("name") == "delete_file" for t in reviewed[0]["body"].get("tools", []))
        assert "forwarded -> 200" in loop.log.read_text()
        data = json.loads(review.reply)
        assert set(data) == {"risk_level", "user_authorization", "outcome", "rationale"}, data
        assert review.verdict == parse_verdict(review.reply, call)
        assert review.verdict.outcome in (Outcome.ALLOW, Outcome.DENY)
        assert not marker.exists()

        # a deny runs only by the user's explicit override; an allow runs as it is
        if review.allows:
            assert ctl.tool_calls.run(call)
        else:
            assert "denied" in ctl.tool_calls.gate(call) and not ctl.tool_calls.run(call)
            await made.idle()
            assert not marker.exists()
            assert ctl.tool_calls.run(call, override=True)
        await made.until_replied()
        assert marker.read_text() == "notes/old.txt"

        # the result went back: the follow-up request carries it in this API's shape, and the server answered it
        follow = loop.seen[-1]
        assert follow["path"].startswith(API_PATHS[api]) and follow["status"] == 200, follow
        assert carries_the_result(api, follow["body"], call.id), json.dumps(follow["body"])[-1500:]
        record = ctl.wb.session.requests[-1]
        assert record.body == follow["body"] and record.reply, record  # recorded as sent, its reply whole
        assert not record.reply["incomplete"] and not record.reply["error"], record.reply
        last = ctl.wb.session.messages[-1]
        # the random model may end at once: an empty reply adds no message (workbench.finish_reply)
        assert last.role == "assistant" or (last.role == "tool" and not record.reply["content"]), last
        assert not ctl.tool_calls.pending()
        ctl.close()
    finally:
        loop.close()


async def test_a_reviewer_endpoint_of_its_own_that_is_llama_cpp_is_held_to_the_schema_on_the_messages_api(
        tmp_path, llama_server):
    """The chat speaks Messages; the reviewer's own endpoint (config.toml review_base_url) is the real server, whose
    /v1/messages ignores a forced tool: the reviewer learns what server it is and asks in chat completions there,
    so its answer is a verdict of the schema (before, every review there was prose: a deny the user had to
    override, every time)."""
    loop = Loop(llama_server, tmp_path)
    try:
        made = await connected(tmp_path, loop.url, api="messages", review_base_url=llama_server,
                               review_model="judge")
        ctl = made.ctl
        assert ctl.tool_calls.load(tool_file(tmp_path, tmp_path / "ran.txt"))
        await made.send("Please delete notes/old.txt")
        await made.idle()
        call = ctl.tool_calls.pending()[0]
        review = ctl.tool_calls.review_of(call)
        assert review.state is ReviewState.DONE and review.reviewer == "judge", review
        assert review.request.api == "chat" and "response_format" in review.request.body, review.request.api
        assert not any(s["body"] == review.request.body for s in loop.seen)  # it went to its own endpoint
        assert set(json.loads(review.reply)) == {"risk_level", "user_authorization", "outcome", "rationale"}
        ctl.close()
    finally:
        loop.close()
