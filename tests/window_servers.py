"""Loopback servers that cut prompts over their window the way real servers are documented to.

`ollama`: answers Ollama's probes (/api/version, /api/show, optionally /api/ps) and, like Ollama's
runner ("truncating input prompt ... keep=4"), keeps the first 4 tokens and the newest half of the rest of
num_ctx (4 + (num_ctx - 4) // 2 in all), saying nothing but the smaller count (`usage.prompt_tokens`, or `prompt_eval_count` alone).
`lmstudio`: answers LM Studio's /api/v0/models and cuts the middle: it keeps the start up to the end
of the first user turn and the newest tokens.
`vllm`: answers vLLM's probes and refuses a request whose prompt and max_tokens pass max_model_len
with vLLM's 400 ("This model's maximum context length is N tokens. However, you requested ...").
`trimproxy`: a vLLM-looking server with a large window behind a "proxy" that drops the oldest
non-system messages: the cut is by someone other than the window.

Each renders the messages as ChatML itself and tokenizes with the Qwen3 tokenizer shipped in
tui/context/tokens/tokenizer_files (read with the `tokenizers` library directly, not through ctxpane), and
answers with the text it kept, so a test can see which messages really survived.
"""

from __future__ import annotations

import json
import lzma
import threading
from functools import lru_cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from tokenizers import Tokenizer

TOKENIZER = Path(__file__).resolve().parent.parent / "tui" / "context" / "tokens" / "tokenizer_files" / "qwen3-tokenizer.json.xz"
OLLAMA_KEEP = 4
HALVING_OLLAMA = "0.30.11"  # the first release whose cut keeps about half the window (llm/llama_server.go)


def ollama_kept_after_keep(num_ctx: int, version: str = HALVING_OLLAMA) -> int:
    """Tokens after num_keep that Ollama keeps of a prompt over num_ctx: from 0.30.11 num_ctx less half the rest
    (`contextShiftPromptLimit`: num_ctx - max((num_ctx - keep) // 2, 1)), before it the whole window."""
    if tuple(int(p) for p in version.split(".")) < (0, 30, 11):
        return num_ctx - OLLAMA_KEEP
    return num_ctx - max((num_ctx - OLLAMA_KEEP) // 2, 1) - OLLAMA_KEEP


@lru_cache(maxsize=1)
def tokenizer() -> Tokenizer:
    return Tokenizer.from_str(lzma.decompress(TOKENIZER.read_bytes()).decode("utf-8"))


def chatml(messages: list[dict]) -> tuple[str, list[int]]:
    """The prompt and the character offset where each message's turn ends."""
    text, ends = "", []
    for message in messages:
        text += f"<|im_start|>{message['role']}\n{message.get('content') or ''}<|im_end|>\n"
        ends.append(len(text))
    return text + "<|im_start|>assistant\n", ends


def encode(text: str) -> tuple[list[int], list[tuple[int, int]]]:
    encoding = tokenizer().encode(text, add_special_tokens=False)
    return list(encoding.ids), list(encoding.offsets)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    @property
    def config(self) -> dict:
        return self.server.config

    def _json(self, status: int, body: dict) -> None:
        raw = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_GET(self) -> None:
        kind, model = self.config["kind"], self.config["model"]
        routes = {"/v1/models": {"object": "list", "data": [{"id": model, **self._model_extra()}]}}
        if kind == "ollama":
            routes["/api/version"] = {"version": self.config["version"]}
            if self.config.get("ps"):
                routes["/api/ps"] = {"models": [{"name": model, "model": model,
                                                 "context_length": self.config["n_ctx"]}]}
        if kind == "lmstudio":
            routes["/api/v0/models"] = {"data": [{"id": model, "max_context_length": 32768,
                                                  "loaded_context_length": self.config["n_ctx"]}]}
        if kind in ("trimproxy", "vllm"):
            routes["/version"] = {"version": "0.9.2"}
        body = routes.get(self.path)
        self._json(200 if body else 404, body or {"error": {"message": "not found"}})

    def _model_extra(self) -> dict:
        return {"max_model_len": self.config["n_ctx"]} if self.config["kind"] in ("trimproxy", "vllm") else {}

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        self.server.bodies.append(body)
        if self.path == "/api/show" and self.config["kind"] == "ollama":
            return self._json(200, {"template": "{{ .Prompt }}", "model_info": {"qwen3.context_length": 40960}})
        if self.path != "/v1/chat/completions":
            return self._json(404, {"error": {"message": "not found"}})
        self._answer(body)

    def _answer(self, body: dict) -> None:
        messages = body.get("messages") or []
        if self.config["kind"] == "trimproxy":
            messages = trimmed(messages)
        text, ends = chatml(messages)
        ids, offsets = encode(text)
        asked = body.get("max_tokens") or 0
        if self.config["kind"] == "vllm" and len(ids) + asked > self.config["n_ctx"]:
            return self._json(400, {"object": "error", "type": "BadRequestError", "param": None, "code": 400,
                                    "message": f"This model's maximum context length is {self.config['n_ctx']} "
                                               f"tokens. However, you requested {len(ids) + asked} tokens "
                                               f"({len(ids)} in the messages, {asked} in the completion). "
                                               "Please reduce the length of the messages or completion."})
        kept = self.cut(ids, offsets, ends, messages)
        kept_text = tokenizer().decode(kept, skip_special_tokens=False)
        usage = {"prompt_tokens": len(kept), "completion_tokens": 1, "total_tokens": len(kept) + 1}
        answer = {"id": "w1", "object": "chat.completion", "model": self.config["model"],
                  "choices": [{"index": 0, "finish_reason": "stop",
                               "message": {"role": "assistant", "content": kept_text}}]}
        if self.config.get("usage", True):
            answer["usage"] = usage
        if self.config["kind"] == "ollama":
            answer["prompt_eval_count"] = len(kept)
        if body.get("stream"):
            return self._stream(answer)
        self._json(200, answer)

    def cut(self, ids: list[int], offsets: list[tuple[int, int]], ends: list[int], messages: list[dict]) -> list[int]:
        limit = self.config["n_ctx"]
        if len(ids) <= limit:
            return ids
        if self.config["kind"] == "ollama":  # the first num_keep tokens, then the newest half of the rest
            return ids[:OLLAMA_KEEP] + ids[len(ids) - ollama_kept_after_keep(limit, self.config["version"]):]
        if self.config["kind"] == "lmstudio":  # the start up to the first user turn's end, then the newest
            first_user = next(i for i, m in enumerate(messages) if m["role"] == "user")
            head = sum(1 for start, _ in offsets if start < ends[first_user])
            return ids[:head] + ids[len(ids) - (limit - head):]
        return ids

    def _stream(self, answer: dict) -> None:
        message = answer["choices"][0]["message"]
        chunks = [{"choices": [{"index": 0, "delta": {"role": "assistant", "content": message["content"]}}]},
                  {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
                  {"choices": [], **({"usage": answer["usage"]} if "usage" in answer else {}),
                   **({"prompt_eval_count": answer["prompt_eval_count"]} if "prompt_eval_count" in answer else {})}]
        raw = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(raw.encode())))
        self.end_headers()
        self.wfile.write(raw.encode())


def trimmed(messages: list[dict]) -> list[dict]:
    """What the 'proxy' forwards: system messages and the newest two others (a keep-last trim)."""
    others = [i for i, m in enumerate(messages) if m["role"] != "system"]
    keep = set(others[-2:])
    return [m for i, m in enumerate(messages) if m["role"] == "system" or i in keep]


class WindowServer:
    def __init__(self, kind: str, n_ctx: int, model: str = "loop-model", **options):
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.config = {"kind": kind, "n_ctx": n_ctx, "model": model, "version": HALVING_OLLAMA, **options}
        self.httpd.bodies = []
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> "WindowServer":
        tokenizer()  # loaded before the first request, so no request waits on it
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
