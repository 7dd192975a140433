"""The app keeps the composer's unsent text with the session: Ctrl+Q, start again on the same file, it is there
(issue 41, item 4; the controller's side is tests/test_draft_kept.py)."""

from __future__ import annotations

from app_helpers import isolated, make_app, settle
from controller_helpers import conversation
from tui.app.chat.composer import Composer
from tui.sessions.store import load_session, save_session


async def test_text_typed_and_not_sent_is_in_the_composer_after_ctrl_q_and_a_restart(tmp_path, monkeypatch):
    isolated(monkeypatch, tmp_path)
    path = tmp_path / "kept.ctxpane.json"
    save_session(conversation(), path)
    app = make_app(tmp_path, file=path, offline=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        app.query_one(Composer).focus()
        await pilot.press(*"a long message", "ctrl+j", *"typed, not sent")
        await pilot.press("ctrl+q")
    assert load_session(path).session.draft == "a long message\ntyped, not sent"
    again = make_app(tmp_path, file=path, offline=True)
    async with again.run_test(size=(120, 40)) as pilot:
        await settle(pilot, again)
        assert again.query_one(Composer).text == "a long message\ntyped, not sent"
        assert again.controller.wb.draft == "a long message\ntyped, not sent", "the pane shows it as the draft"
