"""A lying LiteLLM look-alike on loopback: its health and model-info answers are data, checked and bounded.

The upstream address it reports is never contacted (a recording listener stands there), odd bytes in
the names it reports reach the status line only as visible stand-ins, a model info of the wrong shape
or far too large is a note (never fatal), and a figure of the wrong type is unknown.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tui.client.connect import connect
from tui.client.endpoint import Endpoint
from tui.client.errors import AuthFailed, ServerFailed

KEY = "sk-hostile-test-key-0123456789"
KEY_ENV = "CTXPANE_HOSTILE_GWKEY"


class Recorder:
    """A loopback listener that records every request it gets (it must get none)."""

    def __init__(self) -> None:
        seen = self.seen = []

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                seen.append((self.path, dict(self.headers)))
                self.send_response(200)
                self.end_headers()

            do_POST = do_GET

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def gateway(model_info, needs_key: bool = True, readiness=None):
    """A loopback server that answers like LiteLLM: readiness open, /v1/models and /v1/model/info with the key."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def send(self, status, body, kind="application/json"):
            raw = body if isinstance(body, bytes) else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def do_GET(self):
            keyed = self.headers.get("Authorization") == f"Bearer {KEY}"
            if self.path == "/health/readiness":
                return self.send(200, readiness or {"status": "healthy", "db": "Not connected"})
            if self.path in ("/v1/models", "/v1/model/info") and needs_key and not keyed:
                return self.send(500, b"Internal Server Error", "text/plain")
            if self.path == "/v1/models":
                return self.send(200, {"data": [{"id": "tiny-qwen3"}]})
            if self.path == "/v1/model/info":
                return self.send(200, model_info)
            return self.send(404, {"detail": "Not Found"})

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


async def connect_to(server, monkeypatch, key: str | None = KEY):
    if key:
        monkeypatch.setenv(KEY_ENV, key)
    else:
        monkeypatch.delenv(KEY_ENV, raising=False)
    return await connect(Endpoint.from_env(f"http://127.0.0.1:{server.server_address[1]}", key_env=KEY_ENV))


async def test_the_upstream_address_is_shown_never_contacted_and_odd_bytes_are_visible(monkeypatch):
    recorder = Recorder()
    info = {"data": [{"model_name": "tiny-qwen3", "litellm_params": {
        "model": "openai/\x1b[31mqwen3-\u202eevil", "api_base": recorder.url + "/\x1b]52;c;AAAA\x07"},
        "model_info": {"max_input_tokens": True, "max_tokens": -5}}]}
    server = gateway(info)
    try:
        connection = await connect_to(server, monkeypatch)
        upstream = connection.info.upstream
        assert "\x1b" not in upstream.model + upstream.api_base and "\u202e" not in upstream.model
        assert "\x1b" not in connection.note and "\u202e" not in connection.note
        assert connection.info.window is None  # True and -5 are no window figures
        assert connection.exact is False and connection.assumed is not None
        await connection.client.aclose()
    finally:
        server.shutdown()
        recorder.close()
    assert recorder.seen == []  # the reported upstream got nothing, least of all the key


@pytest.mark.parametrize("model_info", [
    {"data": [{"model_name": "tiny-qwen3", "litellm_params": {"model": "x" * 600}}]},  # a name past the bound
    {"data": [{"model_name": "m"}] * 10_001},  # more entries than any gateway serves
    {"data": "not a list"},
    ["not", "an", "object"],
])
async def test_a_model_info_of_the_wrong_shape_is_a_note_not_a_failure(monkeypatch, model_info):
    server = gateway(model_info)
    try:
        connection = await connect_to(server, monkeypatch)
        await connection.client.aclose()
    finally:
        server.shutdown()
    assert connection.info.kind == "litellm" and connection.info.upstream.model == ""
    assert any("/v1/model/info was not understood" in note for note in connection.info.notes)
    assert "template assumed: qwen3, from the model name" in connection.note  # the listed name still says qwen3
    assert KEY not in " ".join(connection.info.notes)


async def test_an_unknown_family_gets_chatml_without_a_default_system_prompt(monkeypatch):
    server = gateway({"data": [{"model_name": "tiny-qwen3", "litellm_params": {"model": "acme/brand-new-model"}}]})
    try:
        connection = await connect_to(server, monkeypatch)
        await connection.client.aclose()
    finally:
        server.shutdown()
    assumed = connection.assumed
    assert assumed.name == "chatml" and "no known family" in connection.assumption
    rendered = assumed.render([{"role": "user", "content": "Hi"}], add_generation_prompt=True)
    assert rendered == "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    assert connection.tokenizer == "o200k_base" and connection.exact is False


async def test_a_server_that_is_no_gateway_keeps_its_500(monkeypatch):
    server = gateway({}, readiness={"status": "healthy"})  # no "db": not LiteLLM's readiness answer
    try:
        with pytest.raises(ServerFailed) as failed:
            await connect_to(server, monkeypatch, key=None)
    finally:
        server.shutdown()
    assert not isinstance(failed.value, AuthFailed)
    assert f"no key was sent: if this server needs one, set ${KEY_ENV}" in str(failed.value)


def test_doctor_on_a_server_that_names_no_end_token_says_so(cli_in_process, monkeypatch):
    """Not a gateway, no template: the end-token check says what it lacks, never "end token None"."""
    server = gateway({}, needs_key=False, readiness={"status": "up"})
    try:
        result = cli_in_process("doctor", f"http://127.0.0.1:{server.server_address[1]}", "--window-check", "off",
                                "--json")
    finally:
        server.shutdown()
    checks = {check["name"]: check for check in json.loads(result.stdout)["checks"]}
    assert checks["end and start tokens"]["status"] == "skip"
    assert checks["end and start tokens"]["detail"] == "openai-compatible does not say its end and start tokens"
