"""Tab and Shift+Tab move the focus as they arrive, so the keys typed behind them land where the focus went
(issue 19, item 2). Before, they were a screen's bindings, run after the focused widget had taken the keys behind
them: Shift+Tab then a word in the session browser lost the word."""

from __future__ import annotations

from textual.widgets import Input

from app_helpers import isolated, make_app, settle
from key_bursts import post as burst
from tui.app.chat.composer import Composer




async def test_a_word_typed_right_behind_shift_tab_lands_in_the_search_box(tmp_path, monkeypatch):
    from tui.app.screens.sessions import BrowserScreen
    isolated(monkeypatch, tmp_path)
    app = make_app(tmp_path, offline=True)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot, app)
        for run in range(20):
            app.action_open_session()
            await settle(pilot, app)
            assert isinstance(app.screen, BrowserScreen)
            word = f"zep{run}"
            burst(app, ["shift+tab", *word])
            await settle(pilot, app)
            assert app.screen.query_one(Input).value == word, run
            await pilot.press("escape")
            await settle(pilot, app)


async def test_tab_still_completes_a_command_and_moves_on_from_anything_else(tmp_path, monkeypatch):
    isolated(monkeypatch, tmp_path)
    app = make_app(tmp_path, offline=True)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot, app)
        composer = app.query_one(Composer)
        composer.focus()
        burst(app, [*"/ret", "tab"])
        await settle(pilot, app)
        assert composer.text == "/retry" and app.focused is composer
        burst(app, ["tab"])  # nothing left to complete: the focus moves on
        await settle(pilot, app)
        assert app.focused is not composer
