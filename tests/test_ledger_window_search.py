"""The Ledger answers "was this phrase in the window?" for every request of the session (issue 24, item 2): a real
sample session opened in the app, the phrase typed into the Ledger's search."""

from __future__ import annotations

import shutil
from contextlib import asynccontextmanager

from textual.widgets import TabbedContent

from app_helpers import isolated, make_app, plain, settle
from conftest import ROOT
from tui.app.pane.ledger_tab import LedgerView
from waiting import eventually

SAMPLE = ROOT / "sample_sessions" / "long-conversation-dropped-answer.ctxpane.json"


@asynccontextmanager
async def ledger_of_the_sample(tmp_path, monkeypatch):
    """The sample session open in the app, the Ledger tab shown and its search box focused: (pilot, app, ledger)."""
    isolated(monkeypatch, tmp_path)
    path = tmp_path / "dropped.ctxpane.json"
    shutil.copy(SAMPLE, path)
    app = make_app(tmp_path, file=path, offline=True)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot, app)
        app.query_one("#tabs", TabbedContent).active = "ledger"
        await settle(pilot, app)
        ledger = app.query_one(LedgerView)
        ledger.query_one("#ledger-search").focus()
        yield pilot, app, ledger


async def windows_for(tmp_path, monkeypatch, phrase: str) -> str:
    async with ledger_of_the_sample(tmp_path, monkeypatch) as (pilot, _app, ledger):
        for key in phrase:
            await pilot.press("space" if key == " " else key)
        shown = ledger.query_one("#ledger-windows")
        await eventually(lambda: phrase in plain(shown), 30, "the search's answer")
        return plain(shown)


async def test_the_ledger_says_which_requests_the_phrase_reached_and_who_left_it_out(tmp_path, monkeypatch):
    text = await windows_for(tmp_path, monkeypatch, "blue heron")
    assert "'blue heron' reached requests 1-6; not requests 7-8" in text
    lines = text.splitlines()
    seventh = next(line for line in lines if line.startswith("request 7:"))
    assert "not in the window" in seventh and "#1 user holds it, left out by drop-oldest since request 7" in seventh
    first = next(line for line in lines if line.startswith("request 1:"))
    assert "in the window, #1 user (text, character 41" in first and "the reply contains it" in first
    assert "string checks" in text
    assert next(line for line in lines if "not sent yet" in line)  # the request the pane shows now


async def test_a_phrase_no_request_held_is_said_so(tmp_path, monkeypatch):
    text = await windows_for(tmp_path, monkeypatch, "zebra crossing")
    assert "reached no sent request; not requests 1-8" in text


async def test_an_answer_that_lands_after_the_box_was_cleared_is_not_shown(tmp_path, monkeypatch):
    """The search of a long session still runs when the phrase is erased: its answer, arriving later, stood under
    the empty box."""
    import threading

    import tui.app.pane.ledger_tab as ledger_tab
    release, real = threading.Event(), ledger_tab.searched_session

    def held(*args, **kwargs):
        release.wait(30)  # the stand-in for a long session's reading: held until the box is empty
        return real(*args, **kwargs)
    monkeypatch.setattr(ledger_tab, "searched_session", held)
    async with ledger_of_the_sample(tmp_path, monkeypatch) as (pilot, app, ledger):
        box = ledger.query_one("#ledger-search")
        for key in "heron":
            await pilot.press(key)
        for _key in "heron":
            await pilot.press("backspace")
        assert box.value == ""
        release.set()
        await settle(pilot, app)
        await pilot.pause()
        assert plain(ledger.query_one("#ledger-windows")).strip() == ""
