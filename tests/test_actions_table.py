"""One table of actions (tui/app/actions.py) draws the footer, the bindings, F1's list and the palette: an action
is in all of them or in none, a remapped key shows where it is used, and a replay leaves out what edits."""

from __future__ import annotations

import pytest

from app_helpers import isolated, make_app, settle
from tui.app.actions import ACTIONS, BY_ID, EDITING
from tui.app.app import CtxpaneApp, binding_ids
from tui.app.screens.help import HelpScreen

SIZE = (150, 42)


@pytest.fixture()
def sessions(monkeypatch, tmp_path):
    return isolated(monkeypatch, tmp_path)


def test_every_action_of_the_table_is_a_method_of_the_app_and_every_keyed_one_a_binding():
    assert [a.id for a in ACTIONS if not callable(getattr(CtxpaneApp, f"action_{a.id}", None))] == []
    bound = {binding.id: binding for binding in CtxpaneApp.BINDINGS if binding.id}
    assert set(bound) == {a.id for a in ACTIONS if a.key}
    for action_id, binding in bound.items():
        action = BY_ID[action_id]
        assert (binding.key, binding.action, binding.show) == (action.key, action.id, bool(action.footer))
    assert {a.id for a in ACTIONS if a.key} <= binding_ids()  # what [keys] in config.toml may remap


def test_what_edits_is_what_a_replay_refuses():
    assert {a.id for a in ACTIONS if a.edits} | {"show_branch"} == EDITING == CtxpaneApp.EDITING
    assert "copy_curl" not in EDITING and "retry" in EDITING and "summarise_now" in EDITING


async def test_the_palette_lists_every_action_but_quit_and_the_unlabelled_undo(sessions, tmp_path):
    app = make_app(tmp_path, offline=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        titles = [command.title for command in app.get_system_commands(app.screen)]
        expected = [a.title for a in ACTIONS if a.id not in ("quit", "undo", "redo")]
        assert [t for t in titles if t in expected] == [t for t in expected if t != "Help"] + ["Help"]
        assert not any(t.startswith(("Undo", "Redo")) for t in titles)  # nothing to undo yet


async def test_f1_lists_every_action_with_its_key_as_config_toml_maps_it(sessions, tmp_path):
    config = tmp_path / "xdg_config_home" / "ctxpane"
    config.mkdir(parents=True)
    (config / "config.toml").write_text('[keys]\nnext_tab = "ctrl+n"\n')
    app = make_app(tmp_path, offline=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        app.action_help()
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        rows = {title: (key, scope) for key, title, scope in app.screen.rows}
        assert all(action.title in rows for action in ACTIONS)
        assert rows["Next pane tab"] == ("ctrl+n", "app")
        assert rows["Copy request as curl"] == ("ctrl+p", "palette")
        assert rows["Help"] == ("f1", "app")
