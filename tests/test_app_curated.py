"""The curated policy in the app (issue 24): picked like any policy, its verdict on every message in the Ledger."""

from __future__ import annotations

from textual.widgets import TabbedContent

from app_helpers import isolated, make_app, plain, settle
from test_curated_policy import store
from tui.app.pane.ledger_tab import LedgerView
from tui.sessions.model import Session
from tui.sessions.store import save_session
from waiting import eventually


def curated_session_file(tmp_path, messages, window: int):
    """A session file of `messages` under the curated policy with `window` tokens (chatml, o200k_base)."""
    session = Session(title="curated", messages=list(messages))
    session.policy = {"name": "curated", "context_window": window, "max_tokens": 0}
    session.template = {"name": "chatml", "origin": "builtin"}
    session.tokenizer = "o200k_base"
    path = tmp_path / "curated.ctxpane.json"
    save_session(session, path)
    return path


async def test_the_ledger_lists_every_verdict_with_its_score(tmp_path, monkeypatch):
    isolated(monkeypatch, tmp_path)
    messages, line = store(7, 222)
    app = make_app(tmp_path, file=curated_session_file(tmp_path, messages[:-1], 1500), offline=True)
    async with app.run_test(size=(170, 60)) as pilot:
        await settle(pilot, app)
        app.controller.set_draft(messages[-1].text())  # the question, typed
        app.query_one("#tabs", TabbedContent).active = "ledger"
        await settle(pilot, app)
        table = app.query_one(LedgerView).query_one("#ledger-table")
        await eventually(lambda: "superseded by #13" in plain(table), 30, "the curated ledger", pilot=pilot)
        shown = plain(table)
        assert "trimmed to lines 223 of 600" in shown and "curated: budget 1500" in shown
        assert "pinned" in shown and "question" in shown
        assert line in app.wb.view.document.text and "nightly-alpha" not in app.wb.view.document.text
        trust = plain(app.query_one(LedgerView).query_one("#ledger-trust"))
        assert "#1 user: memory (untrusted, fenced): recalled memory: historical hints" in trust
        assert "#12 tool: tool result (untrusted, fenced)" in trust and "#0 system: system (trusted)" in trust


async def test_a_document_attached_with_a_key_supersedes_the_older_one_under_curated(tmp_path, monkeypatch):
    isolated(monkeypatch, tmp_path)
    app = make_app(tmp_path, offline=True)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        for text in ("Price list: widgets cost 4 euros.", "Price list: widgets cost 5 euros (corrected)."):
            await pilot.press("ctrl+o")
            app.screen.query_one("#editor").text = text
            app.screen.query_one("#key").value = "price-list"
            await pilot.press("ctrl+s")
            await settle(pilot, app)
        first, second = app.wb.session.messages[-2:]
        assert first.provenance.key == second.provenance.key == "price-list"
        app.wb.set_policy(name="curated")
        app.controller.set_draft("What do widgets cost?")
        app.refresh_all()
        await settle(pilot, app)
        text = app.wb.view.document.text
        assert "5 euros" in text and "4 euros" not in text
        entry = next(e for e in app.wb.view.curation.entries if e.index == len(app.wb.session.messages) - 2)
        assert entry.verdict.value == "superseded"
