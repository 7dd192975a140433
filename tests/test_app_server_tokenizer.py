"""The server's tokenizer goes away and comes back: the app keeps counting (an estimate, said so) and recovers."""

from __future__ import annotations

import os
import subprocess

import pytest

from app_helpers import isolated, make_app, plain, settle
from conftest import LLAMA_CACHE, SHARED, free_port, need_shared
from tui.controller.tokenizer_fallback import FallbackTokenizer
from tui.client.endpoint import Endpoint
from tui.client.server_tokenizer import ServerTokenizer
from tui.context.tokens.counting import get_tokenizer
from waiting import eventually

pytestmark = pytest.mark.server
SCRIPT = SHARED / "server" / "start-llama-server.sh"


def server(command: str, port: int) -> str:
    args = ["bash", str(SCRIPT), str(port)] if command == "start" else ["bash", str(SCRIPT), "stop", str(port)]
    result = subprocess.run(args, capture_output=True, text=True, timeout=300,
                            env={**os.environ, "LLAMA_CACHE_DIR": LLAMA_CACHE})  # the one install, not the test's
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout.strip().splitlines()[-1] if command == "start" else ""


async def test_counts_fall_back_while_the_server_is_away_and_recover(monkeypatch, tmp_path):
    if not SCRIPT.exists():
        need_shared("the real llama.cpp server is needed")
    isolated(monkeypatch, tmp_path)
    port = free_port()
    url = server("start", port)
    try:
        app = make_app(tmp_path, offline=True)
        async with app.run_test(size=(160, 48)) as pilot:
            await settle(pilot, app)
            tokenizer = FallbackTokenizer(ServerTokenizer(Endpoint(url)), get_tokenizer("qwen3"),
                                          app.controller.tokenizer_source_changed)
            app.controller.use_tokenizer(tokenizer, True)
            await pilot.press(*"hello there")
            await settle(pilot, app)
            assert app.wb.view.snapshot.counts.exact and not tokenizer.falling_back
            exact_total = app.wb.view.sent_tokens
            server("stop", port)
            await pilot.press(*" again")
            await settle(pilot, app)
            assert app.is_running and tokenizer.falling_back
            assert not app.wb.view.snapshot.counts.exact
            assert "does not answer" in " ".join(plain(app.query_one("#status")).split())
            assert "estimate" in plain(app.query_one("#summary"))
            assert app.wb.view.sent_tokens > exact_total  # still counting what is typed
            server("start", port)
            await eventually(lambda: not tokenizer.falling_back and app.wb.view.snapshot.counts.exact, 20,
                             "the counts to come back to the server's tokenizer", pilot=pilot)
            assert "back" in plain(app.query_one("#status"))
    finally:
        server("stop", port)
