"""Found by a review (fixed since; the test failed before): In the app: a session whose earlier messages have no word bm25s keeps, under the curated policy: the computation
raises ValueError in the worker (not a TemplateRenderError), so the pane never gets a view."""
import pytest

from test_app_curated import curated_session_file
from app_helpers import isolated, make_app, settle
from tui.context.messages import Message


@pytest.mark.asyncio
async def test_the_app_shows_a_view_under_curated_for_short_messages(tmp_path, monkeypatch):
    isolated(monkeypatch, tmp_path)
    path = curated_session_file(tmp_path, [Message("user", "a", id="m0"), Message("assistant", "I", id="m1")], 4000)
    app = make_app(tmp_path, file=path, offline=True)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        app.controller.set_draft("Why?")
        await settle(pilot, app)
        view = app.wb.view
        assert view is not None and view.curation is not None and "Why?" in view.document.text
