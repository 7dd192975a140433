"""`ctxpane tap` end to end in a real terminal (tmux): an agent run with OPENAI_BASE_URL pointed at the tap
works as it does without it, the app lists its requests live, and the sessions it saves replay."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import ROOT, free_port
from tmux_driver import Tmux

pytestmark = pytest.mark.server

AGENT = """
import openai
client = openai.OpenAI(max_retries=0)
history = [{"role": "system", "content": "tmux agent"}, {"role": "user", "content": "first"}]
for turn in range(3):
    reply = client.chat.completions.create(model="tiny-qwen3", messages=history, max_tokens=4, temperature=0)
    history += [{"role": "assistant", "content": reply.choices[0].message.content}, {"role": "user", "content": f"t{turn}"}]
    if turn == 1:
        history = history[:1] + history[-3:]
print("agent done")
"""


def test_an_agent_through_the_tap_in_a_real_terminal(llama_server, tmp_path):
    tmux = Tmux(tmp_path)
    port = free_port()
    try:
        tmux.start("tap", "--upstream", llama_server, "--port", str(port), "--session-dir", str(tmp_path / "tapped"))
        tmux.wait_for(rf"tap http://127\.0\.0\.1:{port}/v1")
        env = {**os.environ, "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1", "OPENAI_API_KEY": "sk-tmux-key-0123456789"}
        run = subprocess.run([sys.executable, "-c", AGENT], capture_output=True, text=True, env=env, timeout=120)
        assert run.returncode == 0 and "agent done" in run.stdout, run.stderr
        tmux.wait_for(r"#3 c1\.3 OpenAI/Python")
        tmux.wait_for(r"client cut 2")
        tmux.wait_for(r"conversation 1 · request 3")
        assert "sk-tmux-key" not in tmux.screen()
        tmux.keys("q")
        tmux.wait_for(r"ctxpane: 1 conversation saved in", timeout=20)  # the files found written
    finally:
        tmux.stop()
    (path,) = (tmp_path / "tapped").glob("*.ctxpane.json")
    check = subprocess.run([sys.executable, "-m", "tui", "replay", "--check", str(path)], capture_output=True,
                           text=True, cwd=str(ROOT), timeout=60)
    assert check.returncode == 0 and check.stdout.count("matches the stored request") == 3, check.stdout
