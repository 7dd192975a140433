"""Bursts of keys at full speed arrive whole (issue 19), in a real terminal: tmux sends each burst in one write,
as a fast typist or a paste of keys does.

Before: Textual ran an editor's own bindings (End, Backspace, Delete) when the key reached the App, after the
editor's queue had inserted the printable keys behind it: `End BSpace 1 2` left "1", `5 BSpace 6` left "5"
(tui/app/safe_inputs.py OrderedKeys).
"""

from __future__ import annotations

import re

import pytest

from tmux_driver import Tmux


@pytest.fixture()
def tmux(tmp_path):
    terminal = Tmux(tmp_path)
    yield terminal
    terminal.stop()


def test_bursts_of_editing_keys_arrive_whole_in_the_composer_and_the_settings(tmux):
    tmux.start("--no-scan")
    tmux.wait_for(r"offline")
    for run in range(20):
        base = f"run{run:02d}"
        tmux.keys(*base, "1", "2", "3", "End", "BSpace", "BSpace", "7", "Left", "Left", "BSpace", "9", "End", "8")
        tmux.wait_for(re.escape(f"{base[:-1]}9178"), timeout=10)  # the Backspace took the 0 before "17"
        tmux.keys("C-a", "C-k")  # (a TextArea's own keys too: the line is cleared)
        tmux.wait_gone(base[:-1] + "9178")
    tmux.keys("F8")
    tmux.wait_for(r"Settings \(saved with the session")
    tmux.keys("C-a", "C-k", "5", "0", "0", "0", "BSpace", "BSpace", "1", "2", "Home", "Delete", "9")
    tmux.wait_for(r"\b9012\b", timeout=10)


async def test_ctrl_c_with_nothing_selected_still_reaches_the_app(tmp_path, monkeypatch):
    """Found by review: the editor's copy skips when nothing is selected; the key was swallowed all the same,
    and Textual's 'how to quit' notice never came."""
    from app_helpers import isolated, make_app, settle
    isolated(monkeypatch, tmp_path)
    app = make_app(tmp_path, offline=True)
    notices = []
    shown = app.notify
    app.notify = lambda text, **kw: (notices.append(str(text)), shown(text, **kw))
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await settle(pilot, app)
        await pilot.press("ctrl+c")
        await settle(pilot, app)
        assert any("quit" in text.lower() for text in notices), notices


def test_replay_predicts_with_the_models_provider_rule():
    """Found by review: every replay predicted with llama.cpp's rule, a gpt-4o session too."""
    from tui.context.templates.library import builtin_template
    from tui.context.tokens.tokenizers import get_tokenizer
    from tui.sessions.model import Session
    from tui.sessions.replay import Replayer
    for model, rule in (("gpt-4o", "openai"), ("claude-sonnet-4-5", "anthropic"), ("tiny-qwen3", "llama.cpp")):
        replayer = Replayer(Session(model=model), builtin_template("openai"), get_tokenizer("o200k_base"))
        assert replayer.cache_rule == rule
