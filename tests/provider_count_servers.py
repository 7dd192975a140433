"""Loopback servers that answer the providers' token-count endpoints in their documented shapes.

OpenAI: POST /v1/responses/input_tokens, key in `Authorization: Bearer`, a Responses API `input` (messages
with input_text/output_text/input_image parts, function_call and function_call_output items), flat function
tools; answers {"object": "response.input_tokens", "input_tokens": N}.
Anthropic: POST /v1/messages/count_tokens, key in `x-api-key`, `anthropic-version` required, `system` apart,
messages alternating user/assistant from a user turn, tool_result only after its tool_use, tools with
`input_schema`; answers {"input_tokens": N}.
Gemini: POST /v1beta/models/{model}:countTokens, key in `x-goog-api-key`, a `generateContentRequest` whose
contents are user/model turns of parts; answers {"totalTokens": N}.
A request not of its shape gets a 400 naming what is wrong. N is a stand-in count (a token per four
characters of text, three per turn): what is tested is that ctxpane asks in the right shape, with the key in the
right header and only there, and shows the provider's figure beside its own.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

KEY = "sk-count-test-0123456789abcdef"


def stand_in_count(texts: list[str], turns: int) -> int:
    return sum(len(text) for text in texts) // 4 + 3 * turns


class Wrong(Exception):
    pass


def _need(condition: bool, what: str) -> None:
    if not condition:
        raise Wrong(what)


def openai(body: dict) -> dict:
    _need(isinstance(body.get("model"), str) and body["model"], "model is required")
    texts, items = [], body.get("input")
    _need(isinstance(items, list) and items, "input must be a non-empty list")
    for item in items:
        if item.get("type") == "function_call":
            _need(isinstance(item.get("arguments"), str) and item.get("call_id"), "function_call needs call_id, "
                                                                                  "arguments as a string")
            texts.append(item["name"] + item["arguments"])
        elif item.get("type") == "function_call_output":
            _need(isinstance(item.get("output"), str) and item.get("call_id"), "function_call_output shape")
            texts.append(item["output"])
        else:
            _need(item.get("role") in ("user", "assistant", "system", "developer"), f"bad role {item.get('role')}")
            for part in item.get("content"):
                _need(part.get("type") in ("input_text", "output_text", "input_image"), f"bad part {part}")
                _need(part["type"] != "output_text" or item["role"] == "assistant", "output_text outside assistant")
                texts.append(part.get("text", ""))
    for tool in body.get("tools", []):
        _need(tool.get("type") == "function" and "name" in tool and "function" not in tool, "tools are flat")
        texts.append(json.dumps(tool))
    return {"object": "response.input_tokens", "input_tokens": stand_in_count(texts, len(items))}


def anthropic(body: dict, headers) -> dict:
    _need(headers.get("anthropic-version") == "2023-06-01", "anthropic-version header required")
    _need(isinstance(body.get("model"), str) and body["model"], "model is required")
    messages, texts, pending = body.get("messages"), [], set()
    _need(isinstance(messages, list) and messages and messages[0]["role"] == "user", "messages start with user")
    for index, message in enumerate(messages):
        _need(message["role"] in ("user", "assistant"), f"role {message['role']} is not allowed here")
        _need(index == 0 or messages[index - 1]["role"] != message["role"], "roles must alternate")
        for block in message["content"]:
            kind = block.get("type")
            if kind == "tool_use":
                _need(isinstance(block.get("input"), dict), "tool_use input is an object")
                pending.add(block["id"])
                texts.append(block["name"] + json.dumps(block["input"]))
            elif kind == "tool_result":
                _need(block.get("tool_use_id") in pending, "tool_result without its tool_use")
                texts.append(block["content"])
            elif kind == "text":
                texts.append(block["text"])
            else:
                _need(kind == "image" and block["source"]["type"] in ("base64", "url"), f"bad block {kind}")
    if "system" in body:
        _need(isinstance(body["system"], str), "system is a string here")
        texts.append(body["system"])
    for tool in body.get("tools", []):
        _need("input_schema" in tool and "name" in tool, "tools need name and input_schema")
        texts.append(json.dumps(tool))
    return {"input_tokens": stand_in_count(texts, len(messages))}


def gemini(body: dict) -> dict:
    request = body.get("generateContentRequest")
    _need(isinstance(request, dict) and request.get("model", "").startswith("models/"), "generateContentRequest")
    texts = []
    for content in request["contents"]:
        _need(content["role"] in ("user", "model"), f"role {content['role']}")
        for part in content["parts"]:
            _need(len(part) == 1, "one field a part")
            texts.append(json.dumps(part))
    if "systemInstruction" in request:
        texts.extend(p["text"] for p in request["systemInstruction"]["parts"])
    return {"totalTokens": stand_in_count(texts, len(request["contents"]))}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:  # enough of a chat server for the app to connect and send
        if self.path == "/v1/models":
            return self._send(200, {"object": "list", "data": [{"id": "count-model", "object": "model"}]})
        self._send(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.seen.append({"path": self.path, "headers": dict(self.headers.items()), "body": raw})
        if self.path == "/v1/chat/completions":
            return self._chat(json.loads(raw))
        if getattr(self.server, "stall", False):  # a count endpoint that never answers
            self.server.released.wait(30)
            return
        try:
            answer = self._answer(json.loads(raw))
        except (Wrong, KeyError, TypeError, AttributeError) as exc:
            return self._send(400, {"error": {"message": f"invalid request: {exc}"}})
        if answer is None:
            return self._send(401, {"error": {"message": "invalid key"}})
        self._send(200, answer)

    def _answer(self, body: dict) -> dict | None:
        kind, headers = self.server.kind, self.headers
        if kind == "openai" and self.path == "/v1/responses/input_tokens":
            return openai(body) if headers.get("Authorization") == f"Bearer {KEY}" else None
        if kind == "anthropic" and self.path == "/v1/messages/count_tokens":
            return anthropic(body, headers) if headers.get("x-api-key") == KEY else None
        if kind == "gemini" and self.path.startswith("/v1beta/models/") and self.path.endswith(":countTokens"):
            return gemini(body) if headers.get("x-goog-api-key") == KEY else None
        raise Wrong(f"no such endpoint {self.path}")

    def _chat(self, body: dict) -> None:
        answer = {"id": "c1", "model": "count-model", "choices": [{"index": 0, "finish_reason": "stop",
                                                                    "message": {"role": "assistant", "content": "ok"},
                                                                    "delta": {"content": "ok"}}]}
        if not body.get("stream"):
            return self._send(200, answer)
        raw = f"data: {json.dumps(answer)}\n\ndata: [DONE]\n\n".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def _send(self, status: int, data: dict) -> None:
        raw = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


class CountServer:
    def __init__(self, kind: str) -> None:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.kind, self.httpd.seen = kind, []
        self.httpd.released = threading.Event()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.seen = self.httpd.seen

    def __enter__(self) -> "CountServer":
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.released.set()
        self.httpd.shutdown()
        self.httpd.server_close()
