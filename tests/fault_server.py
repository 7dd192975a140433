"""A small OpenAI-style server on a real loopback socket that misbehaves on purpose.

The first path segment picks the behaviour: /ok, /cut, /nodone, /garbage, /errevent, /ratelimit,
/busy, /auth, /missing, /overflow, /boom, /slow, /plain, /crlf, /redirect, /capture, and the hostile ones
below (wrong shapes, huge lines and bodies, trickles, lies). A scenario's `p_` method answers the
other paths under it (probes such as /props or /tokenize), its `m_` method answers /v1/models.
Every request's headers are recorded so tests can check what was sent (e.g. that no key follows a
redirect); `server.counters["written"]` counts the bytes a huge answer got out before the client
stopped reading.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from waiting import until


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
        if self.path.endswith("/v1/models") and hasattr(self, f"m_{self._scenario()}"):
            return getattr(self, f"m_{self._scenario()}")()
        if self.path.endswith("/v1/models"):
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

    def _scenario(self) -> str:
        return self.path.strip("/").split("/")[0]

    def _route(self) -> None:
        scenario = self._scenario()
        if not self.path.endswith("/chat/completions") and scenario != "redirect":
            # probes of llama.cpp/vLLM/Ollama extras: only scenarios with a p_ method have them
            return getattr(self, f"p_{scenario}", self.s_missing)()
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

    def _stream(self, chunks: list[dict]) -> None:
        self._start_chunked()
        self._events(chunks)
        self._send("data: [DONE]\n\n")
        self._finish()

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

    def s_plain(self) -> None:  # a short reply of text alone (no tool calls): one exchange, nothing more to answer
        self._stream([chunk("plain "), chunk("reply"), chunk(finish_reason="stop")])

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

    def s_overflowhuge(self) -> None:  # a refusal whose words name a window no server has (vLLM's wording)
        self._json(400, {"error": {"message": "This model's maximum context length is 999999999 tokens. However, "
                                   "you requested 12 tokens (12 in the messages, 0 in the completion).",
                                   "type": "BadRequestError"}})

    def s_overflowlies(self) -> None:  # llama.cpp's refusal with figures no server has
        self._json(400, {"error": {"code": 400, "message": "request exceeds the available context size",
                                   "type": "exceed_context_size_error", "n_prompt_tokens": -5, "n_ctx": 0}})

    def s_boom(self) -> None:
        self._json(500, {"error": {"message": "internal failure in the sampler"}})

    def s_slow(self) -> None:  # a slow model: a piece every `delay` seconds, then a long think before the end
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


    # -- hostile scenarios: wrong shapes after a partial reply ----------------------------------
    def _partial_then(self, *raw_events: str) -> None:
        self._start_chunked()
        self._events(PARTIAL)
        for raw in raw_events:
            self._send(f"data: {raw}\n\n")
        self._send("data: [DONE]\n\n")
        self._finish()

    def s_choicestr(self) -> None:
        self._partial_then('{"choices": ["x"]}')

    def s_contentnum(self) -> None:
        self._partial_then('{"choices": [{"delta": {"content": 5}}]}')

    def s_usagelist(self) -> None:
        self._partial_then('{"usage": [1]}')

    def s_notobject(self) -> None:
        self._partial_then("[1, 2]")

    def s_badindex(self) -> None:
        self._partial_then('{"choices": [{"delta": {"tool_calls": [{"index": -1, "function": {"name": "f"}}]}}]}')

    def s_finishnum(self) -> None:
        self._partial_then('{"choices": [{"delta": {}, "finish_reason": 7}]}')

    def s_bigint(self) -> None:
        self._partial_then('{"choices": [], "usage": {"prompt_tokens": ' + "9" * 5000 + "}}")

    def s_bigextra(self) -> None:  # a huge number in a field the client does not use: ignored
        self._partial_then('{"choices": [{"delta": {}, "finish_reason": "stop"}], "extra": ' + "9" * 5000 + "}")

    def s_deep(self) -> None:
        self._partial_then('{"choices": [], "extra": ' + "[" * 100_000 + "]" * 100_000 + "}")

    def s_negusage(self) -> None:
        self._partial_then('{"choices": [], "usage": {"prompt_tokens": -3}}')

    def s_addedfields(self) -> None:  # unknown fields everywhere: must be ignored, not fatal
        self._start_chunked()
        for item in PARTIAL:
            extra = {**item, "new_top": {"a": [1, 2]}, "choices": [{**item["choices"][0], "logprobs": None,
                                                                    "delta": {**item["choices"][0]["delta"],
                                                                              "annotations": [], "refusal": None}}]}
            self._send(f"data: {json.dumps(extra)}\n\n")
        self._send('data: {"choices": [{"delta": {}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 4, '
                   '"completion_tokens": 3, "total_tokens": 7, "new_usage_field": "x"}, "timings": {"cache_n": 1, '
                   '"draft_n": 2}}\n\n')
        self._send("data: [DONE]\n\n")
        self._finish()

    def s_badutf8(self) -> None:
        self._start_chunked()
        self._events(PARTIAL)
        raw = b'data: {"choices": [{"delta": {"content": "\xff\xfe!"}, "finish_reason": "stop"}]}\n\n'
        self.wfile.write(f"{len(raw):x}\r\n".encode() + raw + b"\r\n")
        self._send("data: [DONE]\n\n")
        self._finish()

    def s_authecho(self) -> None:  # quotes the key back, whole and cut short
        key = self.headers.get("Authorization", "").removeprefix("Bearer ")
        self._json(401, {"error": {"message": f"Incorrect API key {key}; first part {key[:12]}…"}})

    def s_error200(self) -> None:  # a whole (non-streamed) answer that is an error with status 200
        self._json(200, {"error": {"message": "model not loaded \x1b[31m"}})

    def s_echojunk(self) -> None:  # not JSON, with the key in it
        key = self.headers.get("Authorization", "").removeprefix("Bearer ")
        self._raw(200, f"oops {key} <html>".encode(), "text/html")

    def s_echokey(self) -> None:  # a mid-stream error that quotes the Authorization header back
        key = self.headers.get("Authorization", "").removeprefix("Bearer ")
        self._start_chunked()
        self._events(PARTIAL)
        self._send(f"event: error\ndata: {json.dumps({'error': {'message': f'bad key {key} here'}})}\n\n")
        self._finish()

    def s_echokeychunk(self) -> None:
        key = self.headers.get("Authorization", "").removeprefix("Bearer ")
        self._partial_then(json.dumps({"error": {"message": f"quota for {key}"}}))

    # -- hostile scenarios: sizes, times and lies ---------------------------------------------------
    def _count(self, size: int) -> None:
        self.server.counters["written"] = self.server.counters.get("written", 0) + size

    def s_longline(self) -> None:  # 100 MB with no newline, 1 MiB at a time
        self._start_chunked()
        self._events(PARTIAL)
        self._send("data: ")
        piece = "x" * (1 << 20)
        for _ in range(100):
            self._send(piece)
            self._count(len(piece))
        self._finish()

    def s_manyreply(self) -> None:  # well-formed chunks for ever: only the reply bound stops it
        self._start_chunked()
        self._events(PARTIAL)
        piece = json.dumps(chunk("y" * 1000))
        for _ in range(100_000):
            self._send(f"data: {piece}\n\n")
            self._count(len(piece))
        self._finish()

    def s_hugeerror(self) -> None:  # a 50 MB error body
        self.send_response(500)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(50 << 20))
        self.end_headers()
        piece = b"E" * (1 << 20)
        for _ in range(50):
            self.wfile.write(piece)
            self._count(len(piece))

    def s_markup(self) -> None:
        self._json(400, {"error": {"message": "[@click=app.bell]x[/] [bold red]boom[/] \x1b]52;c;ZXZpbA==\x07"
                                              "\x1b[2J\x1b]8;;http://evil/\x1b\\link\x1b]8;;\x1b\\ \u202egnp.exe"
                                              " \x9b31m" + "z" * 10_000}})

    def s_forever(self) -> None:  # a partial reply, then keep-alive comments for ever
        self._start_chunked()
        self._events(PARTIAL)
        for _ in range(2000):
            self._send(": ping\n\n")
            time.sleep(0.02)  # a keep-alive every 20 ms: well within any read timeout
        self._finish()

    def s_trickle(self) -> None:  # a slowloris: one byte at a time, each well within the read timeout
        self._start_chunked()
        self._events(PARTIAL)
        for char in 'data: {"choices": [{"delta": {"content": "never"}}]}\n\n' * 10:
            self._send(char)
            time.sleep(self.server.delay)
        self._finish()

    def _trickle_json(self, body: dict) -> None:
        raw = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        for index in range(len(raw)):
            self.wfile.write(raw[index:index + 1])
            self.wfile.flush()
            time.sleep(self.server.delay)  # a byte at a time, slowly: the trickle is the scenario

    def s_trickleonce(self) -> None:
        self._trickle_json({"choices": [{"message": {"content": "never whole"}, "finish_reason": "stop"}]})

    def s_shortlength(self) -> None:  # says 5,000 bytes, sends 40, hangs up
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "5000")
        self.end_headers()
        self.wfile.write(b'{"choices": [{"message": {"content": "cut')
        self._cut()

    def s_longlength(self) -> None:  # says 12 bytes, sends a whole reply: the reply is read cut short
        raw = json.dumps({"choices": [{"message": {"content": "whole reply"}, "finish_reason": "stop"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "12")
        self.end_headers()
        self.wfile.write(raw)
        self.close_connection = True

    def s_streamlength(self) -> None:  # an event stream whose Content-Length ends it after the partial reply
        events = "".join(f"data: {json.dumps(item)}\n\n" for item in PARTIAL)
        rest = f"data: {json.dumps(chunk(' and more', finish_reason='stop'))}\n\ndata: [DONE]\n\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(events.encode())))
        self.end_headers()
        self.wfile.write((events + rest).encode())
        self.close_connection = True

    # -- hostile probes ----------------------------------------------------------------------------
    def p_strctx(self) -> None:
        if self.path.endswith("/props"):
            return self._json(200, {"chat_template": "{{ messages }}", "build_info": "b1",
                                    "default_generation_settings": {"n_ctx": "8192"}})
        self.s_missing()

    def p_ollamabig(self) -> None:
        if self.path.endswith("/api/version"):
            return self._json(200, {"version": "0.5.7"})
        if self.path.endswith("/api/show"):
            raw = b'{"template": "{{ .Prompt }}", "model_info": {"llama.context_length": ' + b"9" * 5000 + b"}}"
            return self._raw(200, raw)
        self.s_missing()

    def p_vllmbad(self) -> None:
        self.s_missing()

    def m_vllmbad(self) -> None:
        self._json(200, {"data": [{"id": "m", "max_model_len": 10**12}]})

    def m_manymodels(self) -> None:  # 1e6 models, about 20 MB
        raw = json.dumps({"object": "list", "data": [{"id": f"m{i}"} for i in range(10**6)]}).encode()
        self._raw(200, raw)

    def m_toomany(self) -> None:  # 20,000 models in a small answer
        self._json(200, {"data": [{"id": str(i)} for i in range(20_000)]})

    def m_longid(self) -> None:
        self._json(200, {"data": [{"id": "m" * 600}]})

    def m_tricklemodels(self) -> None:
        self._trickle_json({"data": [{"id": "fault-model"}]})

    def p_webpage(self) -> None:  # a catch-all web app: 200 with HTML on every path but /v1/models
        self._raw(200, b"<html><body>Welcome</body></html>", "text/html")

    def m_llama(self) -> None:
        self._json(200, {"data": [{"id": "fault-model", "meta": {"n_ctx": 4096}}]})

    def p_llama(self) -> None:  # enough of llama.cpp for probes and the server tokenizer
        if self.path.endswith("/props"):
            return self._json(200, {"chat_template": "{{ messages }}", "build_info": "b1", "bos_token": "<s>",
                                    "eos_token": "</s>", "default_generation_settings": {"n_ctx": 4096}})
        if self.path.endswith("/tokenize"):
            text = (self.body or {}).get("content", "")
            return self._json(200, {"tokens": [{"id": ord(c), "piece": c} for c in text]})
        self.s_missing()

    def p_slots(self) -> None:  # llama.cpp's /props and /slots, two slots, one used
        if self.path.endswith("/props"):
            return self._json(200, {"build_info": "b1", "total_slots": 2, "endpoint_slots": True,
                                    "default_generation_settings": {"n_ctx": 4096}})
        if self.path.endswith("/slots"):
            return self._json(200, [{"id": 0, "n_ctx": 4096, "is_processing": False, "id_task": 7,
                                     "n_prompt_tokens": 410, "params": {"temperature": 0.8}},
                                    {"id": 1, "n_ctx": 4096, "is_processing": False}])
        self.s_missing()

    def p_slotsoff(self) -> None:  # --no-slots: /props says so, /slots answers 501
        if self.path.endswith("/props"):
            return self._json(200, {"build_info": "b1", "total_slots": 1, "endpoint_slots": False})
        self._json(501, {"error": {"message": "This server does not support slots endpoint.",
                                   "type": "not_supported_error"}})

    def p_slotsbad(self) -> None:  # a slot list of the wrong shape
        if self.path.endswith("/props"):
            return self._json(200, {"build_info": "b1", "total_slots": 1})
        self._json(200, [{"id": "zero", "n_prompt_tokens": -5}])

    def p_slotsmany(self) -> None:  # more slots than any server has
        if self.path.endswith("/props"):
            return self._json(200, {"build_info": "b1", "total_slots": 10**9})
        self._json(200, [{"id": i} for i in range(5000)])

    def s_logprobs(self) -> None:  # a reply whose generated tokens the server describes (a stripped space)
        token = lambda text: {"token": text, "bytes": list(text.encode()), "logprob": -1.0}  # noqa: E731
        self._stream([chunk(delta={"role": "assistant", "content": None}),
                      {**chunk("hello"), "choices": [{"index": 0, "delta": {"content": "hello"},
                                                      "logprobs": {"content": [token(" hello")]}}]},
                      {**chunk(" wörld"), "choices": [{"index": 0, "delta": {"content": " wörld"},
                                                       "logprobs": {"content": [token(" w"), token("örld")]}}]},
                      chunk(finish_reason="stop")])

    def s_logprobsbad(self) -> None:  # a byte out of range
        self._stream([{**chunk("x"), "choices": [{"index": 0, "delta": {"content": "x"},
                                                  "logprobs": {"content": [{"token": "x", "bytes": [300]}]}}]}])

    def p_redirectprobe(self) -> None:  # every probe redirects to the other server
        self.send_response(307)
        self.send_header("Location", f"{self.server.redirect_to}/llama/{self.path.split('/', 2)[-1]}")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def p_tokbad(self) -> None:
        self._json(200, {"tokens": "not a list"})

    def p_tokslow(self) -> None:
        self._trickle_json({"tokens": [{"id": 1, "piece": "x"}]})

    def _raw(self, status: int, raw: bytes, kind: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        try:
            self.wfile.write(raw)
            self._count(len(raw))
        except OSError:
            pass


class QuietServer(ThreadingHTTPServer):
    block_on_close = False  # a handler still trickling a reply must not hold up the test
    ended = 0  # requests whose handler has returned (or failed: a client that hung up), for tests to wait on
    _ended_lock = threading.Lock()

    def handle_error(self, request, client_address) -> None:  # clients that hang up on purpose
        pass

    def finish_request(self, request, client_address) -> None:
        try:
            super().finish_request(request, client_address)
        finally:
            with self._ended_lock:
                self.ended += 1


class FaultServer:
    def __init__(self, host: str = "127.0.0.1", delay: float = 0.3, port: int = 0):
        self.httpd = QuietServer((host, port), Handler)
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

    def wait_handled(self, timeout: float = 10.0) -> None:
        """Wait until every request that arrived has been answered to its end (or its client has hung up)."""
        until(lambda: self.httpd.ended >= len(self.httpd.requests), timeout,
              lambda: f"the server to finish its {len(self.httpd.requests)} requests ({self.httpd.ended} done)")

    def __enter__(self) -> "FaultServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
