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


def every_binding_class() -> list[type]:
    """Every class of the app that may bind keys (each screen, widget and the App of every module of tui.app), and
    what they stand on: Textual's App, Screen, command palette and every widget it ships (TextArea, Input, the tabs
    of the pane…), whose bindings come with them."""
    import importlib
    import pkgutil

    import textual.widgets
    from textual.app import App
    from textual.command import CommandPalette
    from textual.dom import DOMNode
    from textual.screen import ModalScreen, Screen

    import tui.app
    classes: set[type] = {App, Screen, ModalScreen, CommandPalette}
    classes |= {getattr(textual.widgets, name) for name in textual.widgets.__all__}
    for module in pkgutil.walk_packages(tui.app.__path__, "tui.app."):
        loaded = importlib.import_module(module.name)
        classes |= {value for value in vars(loaded).values() if isinstance(value, type) and issubclass(value, DOMNode)}
    return sorted(classes, key=lambda cls: f"{cls.__module__}.{cls.__qualname__}")


def keys_of(key: str) -> set[str]:
    """The key names a binding's key string stands for, each with the names a terminal gives it too (Tab: Ctrl+I)."""
    from textual.keys import _get_key_aliases
    return {alias for name in key.split(",") for alias in _get_key_aliases(name.strip())}


def bound_keys() -> list[tuple[str, str, str]]:
    """(where, key, action) for every binding of every class, as each class of its MRO declares it."""
    from textual.app import App
    from textual.binding import Binding

    from tui.app.chat.composer import Composer
    found = [("App (command palette)", App.COMMAND_PALETTE_BINDING, "command_palette")]
    found += [("Composer (its own keys)", key, "composer") for key in Composer.OWN_KEYS]
    for cls in every_binding_class():
        for base in cls.__mro__:
            for binding in base.__dict__.get("BINDINGS", []):
                key, action = (binding.key, binding.action) if isinstance(binding, Binding) else binding[:2]
                found.append((f"{cls.__qualname__} ({base.__module__}.{base.__qualname__})", key, action))
    return found


def test_the_run_key_of_a_tool_call_is_bound_nowhere_else_in_the_app():
    """Run command acts on one key that nothing else binds: not the composer, the transcript, the pane, the palette,
    another dialog, nor Textual's TextArea and Input (Ctrl+R was Run and the composer's prompt search at once)."""
    from tui.app.actions import RUN_TOOL_KEY
    from tui.app.screens.tool_call import ToolCallScreen
    run = keys_of(RUN_TOOL_KEY)
    runs = {(where, action) for where, key, action in bound_keys() if keys_of(key) & run}
    assert {action for _, action in runs} == {"choose('run')"}, runs
    assert all(where.startswith(ToolCallScreen.__qualname__) for where, _ in runs), runs
    from textual.keys import key_to_character
    assert key_to_character(RUN_TOOL_KEY) is None  # it types nothing: never pressed while writing a text


def test_config_toml_may_not_bind_the_run_key_to_anything_else(sessions, tmp_path):
    config = tmp_path / "xdg_config_home" / "ctxpane"
    config.mkdir(parents=True)
    (config / "config.toml").write_text('[keys]\nnext_tab = "f12"\nhelp = "f1"\n')
    app = make_app(tmp_path, offline=True)
    assert app.settings.keys == {"help": "f1"}
    assert any("f12 is the tool-call dialog's Run command" in problem for problem in app.problems)
