"""Tools in the app: a reply's tool call opens its dialog; the reviewer's verdict is shown beside the call and
its request in the Review tab; a deny blocks Run until the explicit override; the result goes back fenced."""

from __future__ import annotations

import json
import sys

import pytest
from textual.widgets import Button, Static

from app_helpers import isolated, make_app, plain, settle
from tool_call_server import DENY, ToolCallServer
from tui.app.screens.confirm import ConfirmScreen
from tui.app.screens.tool_call import ToolCallScreen
from tui.sessions.tool_file import read_tool_file


@pytest.fixture()
def sessions(monkeypatch, tmp_path):
    return isolated(monkeypatch, tmp_path)


def tools(tmp_path):
    marker = tmp_path / "ran.txt"
    script = "import json, sys; a = json.load(sys.stdin); open(sys.argv[1], 'w').write(a['path']); print('deleted', a['path'])"
    path = tmp_path / "tools.json"
    path.write_text(json.dumps([{"type": "function", "function": {"name": "delete_file", "parameters": {"type": "object"}},
                                 "risky": True, "command": [sys.executable, "-c", script, str(marker)]}]))
    return read_tool_file(path), marker


async def until(pilot, app, condition, what: str, rounds: int = 200):
    for _ in range(rounds):
        await settle(pilot, app)
        if condition():
            return
        await pilot.pause(0.05)
    raise AssertionError(f"never: {what}")


async def test_a_denied_tool_call_is_run_only_after_the_override_and_its_result_goes_back_fenced(sessions, tmp_path):
    loaded, marker = tools(tmp_path)
    with ToolCallServer(DENY) as server:
        app = make_app(tmp_path, flags={"base_url": server.url}, tools=loaded)
        async with app.run_test(size=(160, 48)) as pilot:
            await settle(pilot, app)
            await pilot.press(*"Tidy my notes", "enter")
            await until(pilot, app, lambda: isinstance(app.screen, ToolCallScreen)
                        and "DENY" in plain(app.screen.query_one("#verdict", Static)), "the dialog with the verdict")
            dialog = app.screen
            assert "delete_file" in plain(dialog.query_one(".facts", Static))
            assert sys.executable in plain(dialog.query_one("#command", Static))  # shown before it runs
            assert "Nothing the user wrote" in plain(dialog.query_one("#verdict", Static))
            assert dialog.query_one("#run", Button).disabled and dialog.query_one("#override", Button).display
            await pilot.click("#run")  # disabled: nothing runs
            await settle(pilot, app)
            assert not marker.exists() and isinstance(app.screen, ToolCallScreen)
            await pilot.click("#override")
            await until(pilot, app, lambda: isinstance(app.screen, ConfirmScreen), "the override asked again")
            await pilot.press("y")
            await until(pilot, app, lambda: app.wb.session.messages[-1].role == "assistant"
                        and "deleted" in str(app.wb.session.messages[-1].content), "the reply after the result")
            assert marker.read_text() == "notes/old.txt"
            sent = server.requests[-1]["messages"][-1]
            assert sent["role"] == "tool" and sent["content"].startswith("<untrusted")
            pane = app.screen.query_one("#tabs")
            pane.active = "review"
            await settle(pilot, app)
            shown = plain(app.screen.query_one("#review-view", Static))
            assert "review of delete_file" in shown and "DENY" in shown
            assert "the document it renders to" in shown and "You are a safety reviewer" in shown
            assert '"response_format"' in shown and '"tools"' not in shown


async def test_ctrl_r_runs_an_allowed_call_from_the_dialog(sessions, tmp_path):
    from tool_call_server import ALLOW
    loaded, marker = tools(tmp_path)
    with ToolCallServer(ALLOW) as server:
        app = make_app(tmp_path, flags={"base_url": server.url}, tools=loaded)
        async with app.run_test(size=(160, 48)) as pilot:
            await settle(pilot, app)
            await pilot.press(*"Delete notes/old.txt please", "enter")
            await until(pilot, app, lambda: isinstance(app.screen, ToolCallScreen)
                        and "ALLOW" in plain(app.screen.query_one("#verdict", Static)), "the dialog with an allow")
            assert not app.screen.query_one("#run", Button).disabled
            await pilot.press("ctrl+r")  # the dialog's key, not the app's prompt search
            await until(pilot, app, marker.exists, "the command to run")


async def test_a_tool_name_from_the_model_is_never_markup_in_the_dialog(sessions, tmp_path):
    loaded, _ = tools(tmp_path)
    with ToolCallServer(DENY, call={"name": "[/oops][on red]x", "arguments": "{}"}) as server:
        app = make_app(tmp_path, flags={"base_url": server.url}, tools=loaded)
        async with app.run_test(size=(160, 48)) as pilot:
            await settle(pilot, app)
            await pilot.press(*"hi", "enter")
            await until(pilot, app, lambda: isinstance(app.screen, ToolCallScreen), "the dialog")
            run = app.screen.query_one("#run", Button)
            assert run.disabled and not isinstance(run.tooltip, str) and "[/oops]" in plain(run.tooltip)
            assert "[/oops][on red]x" in plain(app.screen.query_one(".facts", Static))
