"""Replay is read-only: no key, footer entry or palette entry there changes the session; re-send from a
step still makes a new session. Drift records say what drifted."""

from __future__ import annotations

import pytest

from app_helpers import isolated, make_app, plain, settle
from conftest import ROOT
from tui.app.screens.edit import EditScreen
from tui.app.screens.replay import ReplayScreen

SIZE = (150, 42)
EDITING_KEYS = ("ctrl+e", "ctrl+o", "f3", "f4", "f5", "ctrl+z")


@pytest.fixture()
def replayed(monkeypatch, tmp_path):
    isolated(monkeypatch, tmp_path)
    source = ROOT / "sample_sessions" / "timestamp-at-end.ctxpane.json"
    path = tmp_path / "mine.ctxpane.json"
    path.write_text(source.read_text())
    return path


def shown_keys(app) -> set[str]:
    return {b.binding.description for b in app.active_bindings.values() if b.binding.show}


async def test_ctxpane_replay_refuses_every_editing_key(replayed, tmp_path):
    before = replayed.read_bytes()
    app = make_app(tmp_path, offline=True, file=replayed, replay=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        assert isinstance(app.screen, ReplayScreen)
        system = app.controller.system_prompt()
        for key in EDITING_KEYS:
            await pilot.press(key)
            await settle(pilot, app)
            assert isinstance(app.screen, ReplayScreen), key  # no editor opened over it
        await pilot.press(*"typed")
        await settle(pilot, app)
        assert app.controller.system_prompt() == system and app.controller.wb.session.fences
        footer = shown_keys(app)
        assert {"Previous", "Next", "Re-send from here", "Close"} <= footer
        assert not footer & {"Back to composer", "System prompt", "Attach doc", "Model", "Template", "Policy", "Fences", "Undo",
                             "Stop reply"}
        palette = {c.title for c in app.get_system_commands(app.screen)}
        assert "Edit system prompt" not in palette and "Attach document" not in palette
        assert "Help" in palette and "Quit" in palette
    assert replayed.read_bytes() == before


async def test_replay_from_the_palette_is_read_only_and_editing_comes_back_after(replayed, tmp_path):
    app = make_app(tmp_path, offline=True, file=replayed)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        app.action_replay(1)
        await settle(pilot, app)
        assert isinstance(app.screen, ReplayScreen)
        await pilot.press("ctrl+e")
        await settle(pilot, app)
        assert isinstance(app.screen, ReplayScreen)
        await pilot.press("escape")
        await settle(pilot, app)
        assert not isinstance(app.screen, ReplayScreen)
        assert "Edit system prompt" in {c.title for c in app.get_system_commands(app.screen)}
        app.screen.set_focus(None)  # (in the composer, Ctrl+E is the editor's own: end of line)
        await pilot.press("ctrl+e")
        await settle(pilot, app)
        assert isinstance(app.screen, EditScreen)  # out of the replay, the system prompt is editable again


@pytest.mark.parametrize("drift, expected", [
    ({"kind": "tokenizer", "index": None, "line": None, "stored": "253 tokens", "fresh": "250 tokens"},
     "tokenizer drift: the same tokenizer counts 250 tokens today (stored 253 tokens)"),
    ({"kind": "template", "index": None, "line": None, "stored": "sha256 aaaa…", "fresh": "sha256 bbbb…"},
     "template drift: no template at hand gives the stored document (stored sha256 aaaa… · fresh sha256 bbbb…)"),
    ({"kind": "template", "index": 40, "line": 3, "stored": "<|im_start|>", "fresh": "<|start|>"},
     "template drift at line 3: stored '<|im_start|>' · fresh '<|start|>'"),
])
async def test_replay_says_what_drifted_never_line_none(replayed, tmp_path, monkeypatch, drift, expected):
    from tui.sessions.replay import Replayer
    monkeypatch.setattr(Replayer, "drift", lambda self, index, view: dict(drift))
    app = make_app(tmp_path, offline=True, file=replayed, replay=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        info = plain(app.screen.query_one("#replay-info"))
        assert expected in info and "None" not in info
