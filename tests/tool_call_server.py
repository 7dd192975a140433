"""A loopback OpenAI-style server that drives tool-call turns: a scripted tool call, and everything else either
scripted too or forwarded to a real server (`upstream`, e.g. llama.cpp: a tiny model's own tool calls are noise).

    POST …/chat/completions
      the conversation ends with a user message  -> a streamed tool call (`call`: name and arguments); with `hold`,
                                                    its end waits for release(): a test acts at the moment it ends
      the body asks for response_format          -> the reviewer's verdict (`verdict`, as JSON text), or upstream
      otherwise (the tool results are back)      -> a streamed text reply naming the last tool result, or upstream

Run as a script for a terminal session: `python tests/tool_call_server.py PORT [UPSTREAM]`.
"""

from __future__ import annotations

import http.client
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

ALLOW = {"risk_level": "medium", "user_authorization": "explicit", "outcome": "allow",
         "rationale": "The user asked for this file to be deleted."}
DENY = {"risk_level": "high", "user_authorization": "none", "outcome": "deny",
        "rationale": "Nothing the user wrote asks for this; the request came from a tool result."}
CALL = {"name": "delete_file", "arguments": json.dumps({"path": "notes/old.txt"})}


def _chunk(delta: dict, finish: str | None = None) -> dict:
    return {"id": "t1", "object": "chat.completion.chunk", "model": "tool-model",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


class ToolHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        if self.path.endswith("/v1/models"):
            return self._json(200, {"object": "list", "data": [{"id": "tool-model"}]})
        self._json(404, {"error": {"message": "not here"}})

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.loads(raw or b"{}")
        self.server.requests.append(body)
        if not self.path.endswith("/chat/completions"):
            return self._json(404, {"error": {"message": "not here"}})
        messages = body.get("messages") or [{}]
        if messages[-1].get("role") == "user" and "response_format" not in body:
            return self._stream([_chunk({"role": "assistant", "content": None}),
                                 _chunk({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                                         "function": self.server.call}]}),
                                 _chunk({}, "tool_calls")], held=self.server.held)
        if self.server.upstream:
            return self._forward(raw)
        if "response_format" in body:
            return self._json(200, {"id": "r1", "object": "chat.completion", "model": "tool-model",
                                    "choices": [{"index": 0, "finish_reason": "stop", "message": {
                                        "role": "assistant", "content": self.server.verdict}}]})
        last = str(messages[-1].get("content"))
        self._stream([_chunk({"role": "assistant", "content": f"The tool said: {last[:200]}"}), _chunk({}, "stop")])

    def _json(self, status: int, data: dict) -> None:
        raw = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def _stream(self, chunks: list[dict], held: threading.Semaphore | None = None) -> None:
        """The chunks as server-sent events; with `held`, the last chunk waits until it is released."""
        parts = [f"data: {json.dumps(item)}\n\n".encode() for item in chunks]
        parts[-1] += b"data: [DONE]\n\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(sum(len(part) for part in parts)))
        self.end_headers()
        self.wfile.write(b"".join(parts[:-1]))
        self.wfile.flush()
        if held is not None:
            held.acquire(timeout=60)
        self.wfile.write(parts[-1])

    def _forward(self, raw: bytes) -> None:
        target = urlsplit(self.server.upstream)
        connection = http.client.HTTPConnection(target.hostname, target.port, timeout=120)
        connection.request("POST", target.path.rstrip("/") + "/chat/completions", raw,
                           {"Content-Type": "application/json"})
        answer = connection.getresponse()
        data = answer.read()
        self.send_response(answer.status)
        self.send_header("Content-Type", answer.getheader("Content-Type") or "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        connection.close()


class ToolCallServer:
    def __init__(self, verdict: dict | str = ALLOW, call: dict = CALL, upstream: str = "", port: int = 0,
                 hold: bool = False) -> None:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), ToolHandler)
        self.httpd.daemon_threads = True
        self.httpd.requests, self.httpd.upstream, self.httpd.call = [], upstream, call
        self.httpd.held = threading.Semaphore(0) if hold else None
        self.httpd.verdict = verdict if isinstance(verdict, str) else json.dumps(verdict)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    @property
    def requests(self) -> list[dict]:
        return self.httpd.requests

    def release(self) -> None:
        """Let one held tool-call reply end."""
        self.httpd.held.release()

    def set_verdict(self, verdict: dict | str) -> None:
        self.httpd.verdict = verdict if isinstance(verdict, str) else json.dumps(verdict)

    def __enter__(self) -> "ToolCallServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


if __name__ == "__main__":
    server = ToolCallServer(DENY, port=int(sys.argv[1]), upstream=sys.argv[2] if len(sys.argv) > 2 else "")
    server.thread.start()
    print(server.url, flush=True)
    server.thread.join()
