"""End to end in a real terminal (tmux): a chat through the real LiteLLM gateway in front of the real
llama.cpp server. The pane says what the gateway hides; the key is on no screen and in no file."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from conftest import files_holding
from test_e2e_tmux import drafted, wait_for_reply
from tmux_driver import ROOT, Tmux

pytestmark = [pytest.mark.server, pytest.mark.xdist_group("gateway"), pytest.mark.timeout(900)]
KEY_ENV = "CTXPANE_E2E_GWKEY"


@pytest.fixture()
def tmux(tmp_path):
    terminal = Tmux(tmp_path)
    yield terminal
    terminal.stop()


def test_chat_through_the_gateway(litellm_gateway, tmux, tmp_path):
    key = litellm_gateway.key
    tmux.start("--base-url", litellm_gateway.url, "--api-key-env", KEY_ENV, "--no-scan", secrets={KEY_ENV: key})
    tmux.wait_for(r"litellm at http://127\.0\.0\.1")
    screens = [tmux.screen()]
    for attempt in range(3):  # the tiny model sometimes answers nothing: ask again, checking every count
        question = f"Hello through the gateway ({attempt + 1})"
        tmux.keys(question, literal=True)
        shown = drafted(tmux, question, r"(\d+) tokens\s*estimate \(qwen3\)")
        screen = tmux.screen()
        screens.append(screen)
        assert "template qwen3 (assumed)" in screen and "exact" not in screen.split("Document")[0]
        assert "Alibaba" not in screen and "<|im_start|>system" not in screen
        tmux.keys("Enter")
        record = wait_for_reply(tmux, attempt + 1)
        assert record is not None, tmux.screen()
        assert record.usage["prompt_tokens"] == shown, (shown, record.usage)  # what the gateway reported
        assert record.received["verdict"] == "match", record.received
        screens.append(tmux.screen())
        if record.reply["content"].strip():
            break
    assert record.reply["content"].strip()
    tmux.wait_for(re.escape(record.reply["content"].split()[0]))
    screens.append(tmux.screen())
    tmux.keys("Escape", "C-t", "C-t", "C-t", "C-t", "C-t")  # Document → Request (curl with the key as a variable)
    screens.append(tmux.wait_for(r"Authorization: Bearer \$" + KEY_ENV).string)
    assert not any(key in screen for screen in screens)
    tmux.keys("C-q")
    tmux.wait_exit()
    session = tmux.sessions()[0]
    env = {KEY_ENV: key, "XDG_DATA_HOME": str(tmp_path / "data"), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    for form in ("markdown", "request", "curl", "document"):
        exported = subprocess.run([sys.executable, "-m", "tui", "export", str(session), "--format", form,
                                   "--api-key-env", KEY_ENV], capture_output=True, text=True, env={**os.environ, **env},
                                  cwd=str(ROOT), timeout=60)
        assert exported.returncode == 0 and exported.stdout, exported.stderr
        assert key not in exported.stdout + exported.stderr
    assert not files_holding(tmp_path, key), "the key was written to a file"
