"""Tools in the app: a reply's tool calls wait, the composer keeps its focus and text, and their dialog opens when the
user asks (Ctrl+L, the palette); it takes keys only once it has been seen, so keys in flight run nothing. The
reviewer's verdict is shown beside the call and its request in the Review tab; a deny blocks Run (F12) until the
explicit override; the result goes back fenced."""

from __future__ import annotations

import json
import sys

import pytest
from textual.widgets import Button, Static

from app_helpers import isolated, make_app, plain, settle
from key_bursts import post
from tool_call_server import ALLOW, DENY, ToolCallServer
from tui.app.chat.composer import Composer
from tui.app.screens.confirm import ConfirmScreen
from tui.app.screens.prompt_search import PromptSearchScreen
from tui.app.screens.tool_call import ToolCallScreen
from tui.sessions.tool_file import read_tool_file


@pytest.fixture()
def sessions(monkeypatch, tmp_path):
    return isolated(monkeypatch, tmp_path)


def tools(tmp_path, risky: bool = True):
    marker = tmp_path / "ran.txt"
    script = "import json, sys; a = json.load(sys.stdin); open(sys.argv[1], 'w').write(a['path']); print('deleted', a['path'])"
    path = tmp_path / "tools.json"
    path.write_text(json.dumps([{"type": "function", "function": {"name": "delete_file", "parameters": {"type": "object"}},
                                 "risky": risky, "command": [sys.executable, "-c", script, str(marker)]}]))
    return read_tool_file(path), marker


async def until(pilot, app, condition, what: str, rounds: int = 200):
    for _ in range(rounds):
        await settle(pilot, app)
        if condition():
            return
        await pilot.pause(0.05)
    raise AssertionError(f"never: {what}")


async def opened(pilot, app) -> None:
    """Once a call waits: its dialog opened by its key, and on screen long enough to take keys."""
    await until(pilot, app, lambda: app.controller.tool_calls.pending(), "a call waiting")
    await pilot.press("ctrl+l")
    await until(pilot, app, lambda: isinstance(app.screen, ToolCallScreen) and app.screen.taking_keys,
                "the dialog taking keys")


async def test_a_denied_tool_call_is_run_only_after_the_override_and_its_result_goes_back_fenced(sessions, tmp_path):
    loaded, marker = tools(tmp_path)
    with ToolCallServer(DENY) as server:
        app = make_app(tmp_path, flags={"base_url": server.url}, tools=loaded)
        async with app.run_test(size=(160, 48)) as pilot:
            await settle(pilot, app)
            await pilot.press(*"Tidy my notes", "enter")
            await opened(pilot, app)
            await until(pilot, app, lambda: "DENY" in plain(app.screen.query_one("#verdict", Static)), "the verdict")
            dialog = app.screen
            assert "delete_file" in plain(dialog.query_one(".facts", Static))
            assert sys.executable in plain(dialog.query_one("#command", Static))  # shown before it runs
            assert "Nothing the user wrote" in plain(dialog.query_one("#verdict", Static))
            assert dialog.query_one("#run", Button).disabled and dialog.query_one("#override", Button).display
            await pilot.click("#run")  # disabled: nothing runs
            await settle(pilot, app)
            assert not marker.exists() and isinstance(app.screen, ToolCallScreen)
            await pilot.click("#override")
            await until(pilot, app, lambda: isinstance(app.screen, ConfirmScreen) and app.screen.taking_keys,
                        "the override asked again")
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


async def test_f12_runs_an_allowed_call_from_the_dialog(sessions, tmp_path):
    loaded, marker = tools(tmp_path)
    with ToolCallServer(ALLOW) as server:
        app = make_app(tmp_path, flags={"base_url": server.url}, tools=loaded)
        async with app.run_test(size=(160, 48)) as pilot:
            await settle(pilot, app)
            await pilot.press(*"Delete notes/old.txt please", "enter")
            await opened(pilot, app)
            await until(pilot, app, lambda: "ALLOW" in plain(app.screen.query_one("#verdict", Static)), "an allow")
            assert not app.screen.query_one("#run", Button).disabled
            await pilot.press("f12")
            await until(pilot, app, marker.exists, "the command to run")


async def test_a_tool_name_from_the_model_is_never_markup_in_the_dialog(sessions, tmp_path):
    loaded, _ = tools(tmp_path)
    with ToolCallServer(DENY, call={"name": "[/oops][on red]x", "arguments": "{}"}) as server:
        app = make_app(tmp_path, flags={"base_url": server.url}, tools=loaded)
        async with app.run_test(size=(160, 48)) as pilot:
            await settle(pilot, app)
            await pilot.press(*"hi", "enter")
            await opened(pilot, app)
            run = app.screen.query_one("#run", Button)
            assert run.disabled and not isinstance(run.tooltip, str) and "[/oops]" in plain(run.tooltip)
            assert "[/oops][on red]x" in plain(app.screen.query_one(".facts", Static))


async def polled(pilot, condition, what: str) -> None:
    """`condition`, polled with no settle: settling waits for the reply, which the server holds."""
    for _ in range(1000):
        if condition():
            return
        await pilot.pause(0.01)
    raise AssertionError(f"never: {what}")


async def calls_end_with(pilot, app, server, keys: list[str]) -> None:
    """The next question typed while a reply with a call streams; the reply ends; at that moment, before the app
    handles anything else, `keys` arrive as a burst from the terminal (the keys of a typist who has not seen it)."""
    await polled(pilot, lambda: app.controller.sending.streaming and len(server.requests) == 1, "the reply")
    await pilot.press(*"next question")
    server.release()
    await polled(pilot, lambda: app.controller.tool_calls.pending(), "the call waiting")
    post(app, keys)
    await settle(pilot, app)
    await pilot.pause(1.0)  # longer than any dialog waits before it takes keys
    await settle(pilot, app)


@pytest.mark.parametrize("risky", [False, True])
async def test_ctrl_r_typed_as_a_reply_leaves_calls_runs_nothing(sessions, tmp_path, risky):
    """Ctrl+R was the dialog's Run and the composer's prompt search: the dialog opened by itself as the reply
    ended, took the keys in flight, and ran the command (a risky one once allowed) and sent the conversation."""
    loaded, marker = tools(tmp_path, risky)
    with ToolCallServer(ALLOW, hold=True) as server:
        app = make_app(tmp_path, flags={"base_url": server.url}, tools=loaded)
        async with app.run_test(size=(160, 48)) as pilot:
            await settle(pilot, app)
            await pilot.press(*"Delete notes/old.txt please", "enter")
            await calls_end_with(pilot, app, server, ["ctrl+r", *"abc"])
            asked = len(server.requests)
            assert not marker.exists()
            assert isinstance(app.screen, PromptSearchScreen)  # the composer's Ctrl+R, as anywhere else
            await pilot.press("escape")
            await settle(pilot, app)
            assert app.focused is app.main(Composer) and app.main(Composer).text == "next question"
            assert app.controller.tool_calls.pending() and len(server.requests) == asked
            assert all(r["messages"][-1]["role"] == "user" for r in server.requests if "response_format" not in r)


async def test_text_typed_as_a_reply_leaves_calls_stays_in_the_composer(sessions, tmp_path):
    """The keys in flight went into the dialog's Answer by hand, and Ctrl+S sent them as the tool's answer."""
    loaded, marker = tools(tmp_path, risky=False)
    with ToolCallServer(ALLOW, hold=True) as server:
        app = make_app(tmp_path, flags={"base_url": server.url}, tools=loaded)
        async with app.run_test(size=(160, 48)) as pilot:
            await settle(pilot, app)
            await pilot.press(*"Delete notes/old.txt please", "enter")
            await calls_end_with(pilot, app, server, [*" and more", "ctrl+s", *" text"])
            assert not isinstance(app.screen, ToolCallScreen)
            assert app.focused is app.main(Composer)
            assert app.main(Composer).text == "next question and more text"
            assert len(server.requests) == 1 and not marker.exists()
            assert app.controller.tool_calls.pending()
            assert any("Ctrl+L" in str(n.message) or "ctrl+l" in str(n.message) for n in app._notifications)


async def test_the_dialog_takes_no_key_until_it_has_been_seen(sessions, tmp_path):
    """Opened by its key, with more keys behind it in the same burst: none of them acts in it (Run, Answer,
    Refuse, Later) and none is typed into Answer by hand; once it has been on screen a moment, F12 runs."""
    loaded, marker = tools(tmp_path, risky=False)
    with ToolCallServer(ALLOW) as server:
        app = make_app(tmp_path, flags={"base_url": server.url}, tools=loaded)
        async with app.run_test(size=(160, 48)) as pilot:
            await settle(pilot, app)
            await pilot.press(*"Delete notes/old.txt please", "enter")
            await until(pilot, app, lambda: app.controller.tool_calls.pending(), "a call waiting")
            post(app, ["ctrl+l", "f12", *"typed", "ctrl+s", "ctrl+n", "enter", "tab", "enter", "escape"])
            await settle(pilot, app)
            await pilot.pause(1.0)  # longer than the dialog waits before it takes keys
            await settle(pilot, app)
            assert not marker.exists() and len(server.requests) == 1 and app.controller.tool_calls.pending()
            dialog = app.screen
            assert isinstance(dialog, ToolCallScreen) and dialog.taking_keys  # no key of the burst closed it
            assert dialog.query_one("#answer").text == "" and app.focused is dialog.query_one("#answer")
            await pilot.press("f12")
            await until(pilot, app, marker.exists, "the command to run")


async def test_a_session_opened_from_the_browser_is_sent_the_loaded_tools_and_told_of_its_own(sessions, tmp_path):
    from tui.app.screens.sessions import BrowserScreen
    from tui.context.messages import Message
    from tui.sessions.model import Session
    from tui.sessions.store import save_session
    harmless = {"type": "function", "function": {"name": "delete_file", "parameters": {"type": "object"},
                                                 "description": "Lists the files in a folder. Read-only and always safe"}}
    save_session(Session(title="From elsewhere", tools=[harmless], messages=[Message("user", "hi", id="m0")]),
                 tmp_path / "sessions" / "elsewhere.ctxpane.json")
    loaded, marker = tools(tmp_path)
    with ToolCallServer(ALLOW) as server:
        app = make_app(tmp_path, flags={"base_url": server.url}, tools=loaded)
        async with app.run_test(size=(160, 48)) as pilot:
            await settle(pilot, app)
            app.action_open_session()
            await until(pilot, app, lambda: isinstance(app.screen, BrowserScreen) and app.screen.rows, "the browser")
            app.screen.action_open()
            await until(pilot, app, lambda: app.wb.session.title == "From elsewhere", "the session opened")
            told = [n.message for n in app._notifications if "differently" in n.message]
            assert told == ["this session's file describes delete_file differently; the loaded tool file's "
                            "definition is sent"]
            await pilot.press(*"Tidy my notes", "enter")
            await until(pilot, app, lambda: server.requests, "the request sent")
            assert server.requests[0]["tools"] == loaded.wire() and "always safe" not in json.dumps(server.requests)
            assert not marker.exists()
