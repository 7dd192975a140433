"""The Cache tab against the real llama.cpp server: the next request's predicted source (which earlier request,
in which slot or the host cache) and, per request, the prediction beside the server's figure."""

from __future__ import annotations


import pytest

from app_helpers import isolated, make_app, plain, settle
from tui.app.pane.cache_tab import CacheView
from tui.sessions.model import Session
from tui.sessions.store import save_session

SIZE = (160, 48)


@pytest.fixture()
def sessions(monkeypatch, tmp_path):
    return isolated(monkeypatch, tmp_path)


async def test_cache_tab_names_the_request_reused_and_agrees_with_the_server(sessions, tmp_path, llama_server):
    path = tmp_path / "s.json"
    save_session(Session(params={"temperature": 0, "max_tokens": 12}), path)
    app = make_app(tmp_path, file=path, flags={"base_url": llama_server})
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot, app)
        for text in ("Name a blue fruit.", "And a red one?"):
            await pilot.press(*text, "enter")
            for _ in range(200):
                await settle(pilot, app)
                if not app.controller.streaming:
                    break
        app.query_one("#tabs").active = "cache"
        await settle(pilot, app)
        shown = plain(app.query_one(CacheView))
        records = app.controller.wb.session.requests
        assert "reused from request 2 (slot 0)" in shown, shown
        assert records[-1].cache_source == 1 and abs(records[-1].predicted_cached - records[-1].cached_reported) <= 1
        assert "#1 slot 0" in shown, shown
        app.save_screenshot("cache.svg", str(tmp_path))
        assert (tmp_path / "cache.svg").stat().st_size > 0
