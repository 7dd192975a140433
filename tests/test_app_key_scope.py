"""The API key goes only where the user pointed the app, never to a host named in a session file."""

from __future__ import annotations

import json

import pytest

from app_helpers import isolated, make_app, plain, settle
from fault_server import FaultServer
from tui.app.screens.confirm import ConfirmScreen
from tui.sessions.model import Session
from tui.sessions.store import save_session
from session_files import session_data

SIZE = (160, 48)
KEY = "sk-test-key-0123456789abcdef"


@pytest.fixture()
def sessions(monkeypatch, tmp_path):
    return isolated(monkeypatch, tmp_path)


def authorised(server) -> list[str]:
    return [r["path"] for r in server.requests if r["headers"].get("Authorization")]


async def test_session_url_gets_no_key_until_the_user_agrees(sessions, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with FaultServer() as server:
        path = tmp_path / "shared.ctxpane.json"
        save_session(Session(title="from a colleague", base_url=server.url + "/capture"), path)
        app = make_app(tmp_path, file=path)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, app)
            assert server.requests, "the app did not probe the session's server"
            assert authorised(server) == []  # probes went out without the key
            assert app.client is not None and not app.client.endpoint.has_key
            assert "came from the session" in " ".join(plain(app.query_one("#status")).split())
            await app.run_action("trust_endpoint")
            await settle(pilot, app)
            assert isinstance(app.screen, ConfirmScreen)
            await pilot.press("y")
            await settle(pilot, app)
            assert app.client.endpoint.has_key
            assert authorised(server), "after the user agreed, the key is sent"
        assert KEY not in path.read_text()


async def test_flag_url_gets_the_key(sessions, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with FaultServer() as server:
        app = make_app(tmp_path, flags={"base_url": server.url + "/capture"})
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, app)
            assert app.client is not None and app.client.endpoint.has_key
            assert authorised(server)


async def test_declining_keeps_the_key_home(sessions, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with FaultServer() as server:
        path = tmp_path / "shared.ctxpane.json"
        save_session(Session(title="from a colleague", base_url=server.url + "/capture"), path)
        app = make_app(tmp_path, file=path)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, app)
            await app.run_action("trust_endpoint")
            await settle(pilot, app)
            await pilot.press("n")
            await settle(pilot, app)
            assert authorised(server) == []


async def test_placeholder_key_does_not_rewrite_the_session_and_a_real_key_is_never_saved(sessions, tmp_path,
                                                                                           monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "x")  # local servers are often run with a placeholder key
    with FaultServer(delay=0.01) as server:
        app = make_app(tmp_path, flags={"base_url": server.url + "/ok"})
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, app)
            await pilot.press(*"explain xxx and x-rays", "enter")
            await settle(pilot, app)
            assert "explain xxx and x-rays" in app.session_file.read_text()
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with FaultServer(delay=0.01) as server:
        app = make_app(tmp_path, flags={"base_url": server.url + "/ok"})
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, app)
            await pilot.press(*f"my key is {KEY}", "enter")
            await settle(pilot, app)
            saved = session_data(app.session_file)
            # the user's words are kept as written (and said so); the key is nowhere else, not in the title either
            assert any(m["content"] == f"my key is {KEY}" for m in saved["messages"])
            saved["messages"] = []
            for record in saved["requests"]:
                record["body"]["messages"] = []
                record["reply"]["content"] = ""
            assert KEY not in json.dumps(saved) and saved["title"] == "my key is ***"
            assert any("your message holds the key" in n.message for n in app._notifications)


async def test_app_export_is_private_and_a_session_tokenizer_path_is_never_opened(sessions, tmp_path):
    import stat
    fifo = tmp_path / "tokenizer.json"
    import os
    os.mkfifo(fifo)  # opening it for reading would block the tokenizer worker for ever
    path = tmp_path / "s.ctxpane.json"
    session = Session(title="t", tokenizer=str(fifo))
    save_session(session, path)
    app = make_app(tmp_path, offline=True, file=path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        assert app.wb.tokenizer.name != str(fifo)
        await app.run_action("export_markdown")
        await settle(pilot, app)
        exported = path.parent / f"{app.wb.session.id}.md"
        assert exported.exists() and stat.S_IMODE(exported.stat().st_mode) == 0o600
