"""The settings screen in the app: opened by F8 (or Ctrl+comma) and the palette, errors shown under their fields,
applied values persisted and honoured by the pane; config.toml's [policy] and [params] for new sessions."""

from __future__ import annotations


import pytest

from app_helpers import isolated, make_app, plain, settle
from tui.app.screens.settings import SettingsScreen
from session_files import session_data
from waiting import eventually

SIZE = (120, 40)


@pytest.fixture()
def sessions(monkeypatch, tmp_path):
    return isolated(monkeypatch, tmp_path)


async def opened(pilot, app) -> None:
    await eventually(lambda: isinstance(app.screen, SettingsScreen), 10,
                     lambda: f"the settings screen to open: {app.screen!r}", pilot=pilot)
    await pilot.pause()


async def replace_text(pilot, app, key: str, text: str) -> None:
    field = app.screen.query_one(f"#field-{key}")
    field.focus()
    field.value = ""
    await pilot.press(*text)


async def test_f8_sets_the_window_and_temperature_and_they_are_saved(sessions, tmp_path):
    app = make_app(tmp_path, offline=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("f8")
        await opened(pilot, app)
        await replace_text(pilot, app, "context_window", "300")
        await replace_text(pilot, app, "temperature", "warm")
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert isinstance(app.screen, SettingsScreen)  # a wrong field keeps the screen open, said under it
        error = app.screen.query_one("#error-temperature")
        assert error.display and "not a number" in plain(error)
        assert app.wb.policy.context_window != 300  # nothing applied while a field is wrong
        await replace_text(pilot, app, "temperature", "0.4")
        await pilot.press("ctrl+s")
        await settle(pilot, app)
        assert not isinstance(app.screen, SettingsScreen)
        assert app.wb.policy.context_window == 300 and app.wb.session.params["temperature"] == 0.4
        assert app.wb.view.snapshot is not None and app.wb.view.budget == 300 - app.wb.policy.max_tokens
        app.autosave(now=True)
        await settle(pilot, app)
        saved = session_data(app.session_file)
        assert saved["policy"]["context_window"] == 300 and saved["params"]["temperature"] == 0.4
        app.save_screenshot(str(tmp_path / "settings.svg"))


async def test_settings_and_reconnect_are_in_the_palette(sessions, tmp_path):
    app = make_app(tmp_path, offline=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        titles = [command.title for command in app.get_system_commands(app.screen)]
        assert "Settings" in titles and "Reconnect" in titles
        app.action_settings()
        await opened(pilot, app)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, SettingsScreen)


async def test_config_policy_and_params_reach_a_new_session(sessions, tmp_path):
    config = tmp_path / "xdg_config_home" / "ctxpane"
    config.mkdir(parents=True)
    (config / "config.toml").write_text('[policy]\nname = "drop-oldest"\ncontext_window = 8192\nmax_tokens = 512\n'
                                        '[params]\ntemperature = 0.2\n')
    app = make_app(tmp_path, offline=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        app.action_new_session()
        await settle(pilot, app)
        policy = app.wb.policy
        assert (policy.name, policy.context_window, policy.max_tokens) == ("drop-oldest", 8192, 512)
        assert app.wb.request_body(app.wb.view)["temperature"] == 0.2
