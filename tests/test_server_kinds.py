"""Server detection against loopback servers that answer like vLLM, Ollama and LM Studio."""

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tui.client.connect import connect
from tui.client.endpoint import Endpoint
from tui.client.http import OpenAIClient
from tui.client.server_info import hosted_context, probe

ROUTES = {
    "vllm": {("GET", "/v1/models"): {"data": [{"id": "Qwen/Qwen3-8B", "max_model_len": 4096}]},
             ("GET", "/version"): {"version": "0.9.2"}},
    "ollama": {("GET", "/v1/models"): {"data": [{"id": "llama3.2"}]}, ("GET", "/api/version"): {"version": "0.5.7"},
               ("POST", "/api/show"): {"template": "{{ if .System }}<|start_header_id|>system{{ end }}",
                                       "model_info": {"llama.context_length": 131072}}},
    "lmstudio": {("GET", "/v1/models"): {"data": [{"id": "qwen2.5-7b"}]},
                 ("GET", "/api/v0/models"): {"data": [{"id": "qwen2.5-7b", "max_context_length": 32768,
                                                       "loaded_context_length": 4096}]}},
}


def serve(kind):
    routes = ROUTES[kind]

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def answer(self, method):
            if method == "POST":
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body = routes.get((method, self.path))
            raw = json.dumps(body if body is not None else {"error": "not found"}).encode()
            self.send_response(200 if body is not None else 404)
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def do_GET(self):
            self.answer("GET")

        def do_POST(self):
            self.answer("POST")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


async def probe_kind(kind):
    server = serve(kind)
    try:
        async with OpenAIClient(Endpoint(f"http://127.0.0.1:{server.server_address[1]}")) as client:
            return await probe(client)
    finally:
        server.shutdown()


def test_vllm():
    info = asyncio.run(probe_kind("vllm"))
    assert (info.kind, info.build, info.n_ctx, info.model) == ("vllm", "0.9.2", 4096, "Qwen/Qwen3-8B")
    assert info.can_tokenize and not info.has_own_template


def test_ollama_go_template_is_shown_not_run():
    info = asyncio.run(probe_kind("ollama"))
    assert info.kind == "ollama" and info.n_ctx == 131072
    assert info.template_language == "go"
    assert info.chat_template.startswith("{{ if .System }}") and not info.has_own_template
    assert any("Go template" in note for note in info.notes)


def test_lmstudio():
    info = asyncio.run(probe_kind("lmstudio"))
    assert info.kind == "lmstudio" and info.n_ctx == 4096


def test_connect_falls_back_to_estimates_without_a_template():
    server = serve("vllm")
    try:
        async def go():
            connection = await connect(Endpoint(f"http://127.0.0.1:{server.server_address[1]}"))
            await connection.client.aclose()
            return connection
        connection = asyncio.run(go())
    finally:
        server.shutdown()
    assert connection.template is None and connection.tokenizer == "qwen3" and connection.exact is False


@pytest.mark.parametrize("model,window", [("gpt-4o-mini", 128_000), ("gpt-4.1", 1_047_576), ("openai/gpt-5", 400_000),
                                          ("gpt-3.5-turbo", 16_385), ("mystery", None)])
def test_hosted_context_table(model, window):
    assert hosted_context(model) == window
