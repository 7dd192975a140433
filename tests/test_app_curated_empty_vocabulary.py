"""Found by a review (fixed since; the test failed before): In the app: a session whose earlier messages have no word bm25s keeps, under the curated policy: the computation
raises ValueError in the worker (not a TemplateRenderError), so the pane never gets a view."""
import pytest

from app_helpers import isolated, make_app, settle
from tui.context.messages import Message
from tui.sessions.model import Session
from tui.sessions.store import save_session


@pytest.mark.asyncio
async def test_the_app_shows_a_view_under_curated_for_short_messages(tmp_path, monkeypatch):
    isolated(monkeypatch, tmp_path)
    session = Session(title="short", messages=[Message("user", "a", id="m0"), Message("assistant", "I", id="m1")])
    session.policy = {"name": "curated", "context_window": 4000, "max_tokens": 0}
    session.template = {"name": "chatml", "origin": "builtin"}
    session.tokenizer = "o200k_base"
    path = tmp_path / "short.ctxpane.json"
    save_session(session, path)
    app = make_app(tmp_path, file=path, offline=True)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        app.controller.set_draft("Why?")
        await settle(pilot, app)
        view = app.wb.view
        assert view is not None and view.curation is not None and "Why?" in view.document.text
