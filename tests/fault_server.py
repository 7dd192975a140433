"""A small OpenAI-style server on a real loopback socket that misbehaves on purpose.

The first path segment picks the behaviour: /ok, /cut, /nodone, /garbage, /errevent, /ratelimit,
/busy, /auth, /missing, /overflow, /boom, /slow, /crlf, /redirect, /capture. Every request's
headers are recorded so tests can check what was sent (e.g. that no key follows a redirect).
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def chunk(content: str = "", **extra) -> dict:
    delta = {"content": content} if content else {}
    delta.update(extra.pop("delta", {}))
    return {"id": "c1", "object": "chat.completion.chunk", "model": "fault-model",
            "choices": [{"index": 0, "delta": delta, "finish_reason": extra.pop("finish_reason", None)}], **extra}


GOOD_STREAM = [
    chunk(delta={"role": "assistant", "content": None}),
    chunk(delta={"reasoning_content": "Let me "}), chunk(delta={"reasoning_content": "think."}),
    chunk("Hel"), chunk("lo, "), chunk("wörld 👋"),
    chunk(delta={"tool_calls": [{"index": 0, "id": "call_a", "type": "function",
                                 "function": {"name": "get_", "arguments": "{\"ci"}}]}),
    chunk(delta={"tool_calls": [{"index": 0, "function": {"name": "weather", "arguments": "ty\": \"Paris\"}"}}]}),
    chunk(delta={"tool_calls": [{"index": 1, "id": "call_b", "type": "function",
                                 "function": {"name": "get_time", "arguments": "{}"}}]}),
    chunk(finish_reason="tool_calls", timings={"cache_n": 5, "prompt_n": 7, "predicted_per_second": 321.0}),
    {"id": "c1", "object": "chat.completion.chunk", "model": "fault-model", "choices": [],
     "usage": {"prompt_tokens": 12, "completion_tokens": 9, "total_tokens": 21,
               "prompt_tokens_details": {"cached_tokens": 5}}},
]
PARTIAL = [chunk("partial "), chunk("reply "), chunk("kept")]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:  # keep test output clean
        pass

    def do_GET(self) -> None:
        self._record()
        if self.path.endswith("/models"):
            return self._json(200, {"object": "list", "data": [{"id": "fault-model"}]})
        return self._route()

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.body = json.loads(self.rfile.read(length) or b"{}")
        self._record()
        return self._route()

    def _record(self) -> None:
        self.server.requests.append({"path": self.path, "headers": dict(self.headers),
                                     "body": getattr(self, "body", None)})

    def _route(self) -> None:
        scenario = self.path.strip("/").split("/")[0]
        if not self.path.endswith("/chat/completions") and scenario != "redirect":
            return self.s_missing()  # probes of llama.cpp/vLLM/Ollama extras: this server has none
        getattr(self, f"s_{scenario}", self.s_missing)()

    # -- helpers ------------------------------------------------------------------------
    def _json(self, status: int, body: dict, headers: dict | None = None) -> None:
        raw = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(raw)

    def _start_chunked(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _send(self, text: str) -> None:
        raw = text.encode()
        self.wfile.write(f"{len(raw):x}\r\n".encode() + raw + b"\r\n")
        self.wfile.flush()

    def _events(self, chunks: list[dict], newline: str = "\n") -> None:
        for item in chunks:
            self._send(f"data: {json.dumps(item)}{newline}{newline}")

    def _finish(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _cut(self) -> None:
        self.wfile.flush()
        self.close_connection = True
        self.connection.shutdown(2)

    # -- scenarios ----------------------------------------------------------------------
    def s_ok(self) -> None:
        if not self.body.get("stream"):
            return self._json(200, {"id": "x", "object": "chat.completion", "model": "fault-model",
                                    "choices": [{"index": 0, "finish_reason": "stop",
                                                 "message": {"role": "assistant", "content": "whole reply"}}],
                                    "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}})
        self._start_chunked()
        self._events(GOOD_STREAM)
        self._send("data: [DONE]\n\n")
        self._finish()

    def s_crlf(self) -> None:
        self._start_chunked()
        self._send(": a comment line\r\n\r\n")
        self._send('data: {"choices": [{"index": 0, "delta": {"content": "multi"}}],\r\ndata: "model": "m"}\r\n\r\n')
        self._send('data: {"choices": [{"index": 0, "delta": {"content": " line"}, "finish_reason": "stop"}]}\r')
        self._send("\n\r\ndata: [DONE]\r\n\r\n")
        self._finish()

    def s_cut(self) -> None:
        self._start_chunked()
        self._events(PARTIAL)
        self._cut()

    def s_nodone(self) -> None:
        self._start_chunked()
        self._events(PARTIAL)
        self._finish()

    def s_garbage(self) -> None:
        self._start_chunked()
        self._events(PARTIAL)
        self._send("data: {\"choices\": [{\"delta\": \n\n")
        self._finish()

    def s_errevent(self) -> None:
        self._start_chunked()
        self._events(PARTIAL)
        self._send('event: error\ndata: {"error": {"message": "model crashed", "type": "server_error"}}\n\n')
        self._finish()

    def s_ratelimit(self) -> None:
        self.server.counters["ratelimit"] = self.server.counters.get("ratelimit", 0) + 1
        if self.server.counters["ratelimit"] <= 2:
            return self._json(429, {"error": {"message": "slow down", "type": "rate_limit"}}, {"Retry-After": "0"})
        return self.s_ok()

    def s_busy(self) -> None:
        self._json(503, {"error": {"message": "overloaded"}}, {"Retry-After": "7"})

    def s_auth(self) -> None:
        self._json(401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}})

    def s_forbidden(self) -> None:
        self._json(403, {"error": {"message": "This key may not use this model", "type": "permission_error"}})

    def s_missing(self) -> None:
        self._json(404, {"error": {"message": "File Not Found", "type": "not_found_error"}})

    def s_overflow(self) -> None:
        self._json(400, {"error": {"code": 400, "message": "request (9009 tokens) exceeds the available context size"
                                   " (8192 tokens), try increasing it", "type": "exceed_context_size_error",
                                   "n_prompt_tokens": 9009, "n_ctx": 8192}})

    def s_boom(self) -> None:
        self._json(500, {"error": {"message": "internal failure in the sampler"}})

    def s_slow(self) -> None:
        self._start_chunked()
        for item in PARTIAL:
            self._events([item])
            time.sleep(self.server.delay)
        time.sleep(self.server.delay * 10)
        self._finish()

    def s_redirect(self) -> None:
        self.send_response(307)
        self.send_header("Location", f"{self.server.redirect_to}/capture/v1/chat/completions")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def s_capture(self) -> None:
        self.s_ok()


class QuietServer(ThreadingHTTPServer):
    block_on_close = False  # a handler still trickling a reply must not hold up the test
    def handle_error(self, request, client_address) -> None:  # clients that hang up on purpose
        pass


class FaultServer:
    def __init__(self, host: str = "127.0.0.1", delay: float = 0.3):
        self.httpd = QuietServer((host, 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.requests, self.httpd.counters = [], {}
        self.httpd.delay, self.httpd.redirect_to = delay, ""
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def requests(self) -> list[dict]:
        return self.httpd.requests

    def __enter__(self) -> "FaultServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
