"""A tapped request replayed in the app: its Request tab's curl is the request as the client sent it (path and query,
headers, the key as the user's variable), not the app's own shape; a request of the app's own keeps its curl."""

from __future__ import annotations

from app_helpers import isolated, make_app, settle
from tui.app.screens.replay import ReplayScreen
from tui.sessions.log_writer import log_bytes
from tui.sessions.model import RequestRecord, Session

SIZE = (150, 42)


def tapped_session(path, sent: dict | None) -> None:
    body = {"model": "m", "max_tokens": 4, "messages": [{"role": "user", "content": "hi"}]}
    record = RequestRecord(number=1, time="2026-12-07T00:00:00+00:00", body=body, format="messages", sent=sent,
                           reply={"content": "fine"})
    session = Session(title="tap 1", base_url="http://127.0.0.1:9/v1", model="m", requests=[record],
                      template={"name": "chatml", "origin": "builtin"})
    path.write_bytes(log_bytes(session))


async def request_tab_text(tmp_path, monkeypatch, sent: dict | None) -> str:
    isolated(monkeypatch, tmp_path)
    path = tmp_path / "tap.ctxpane.json"
    tapped_session(path, sent)
    app = make_app(tmp_path, offline=True, file=path, replay=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        assert isinstance(app.screen, ReplayScreen)
        app.screen.query_one("#tabs").active = "request"
        await settle(pilot, app)
        return app.screen.query_one("#request-view").text


async def test_a_tapped_request_replays_with_the_clients_path_and_headers(tmp_path, monkeypatch):
    sent = {"method": "POST", "path": "/v1/messages?beta=true", "headers": [
        ["anthropic-beta", "claude-code-20250219"], ["X-Claude-Code-Session-Id", "s-1"], ["x-api-key", "***"]]}
    text = await request_tab_text(tmp_path, monkeypatch, sent)
    assert "http://127.0.0.1:9/v1/messages?beta=true" in text and "anthropic-beta: claude-code-20250219" in text
    assert "X-Claude-Code-Session-Id: s-1" in text and "x-api-key: '\"$OPENAI_API_KEY\"" in text


async def test_a_request_without_sent_keeps_the_apps_curl(tmp_path, monkeypatch):
    text = await request_tab_text(tmp_path, monkeypatch, None)
    assert "http://127.0.0.1:9/v1/messages" in text and "anthropic-version: 2023-06-01" in text
