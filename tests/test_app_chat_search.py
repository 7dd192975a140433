"""Searching the transcript: / opens the search, Enter finds, n/N move the selection, matches highlighted."""

from __future__ import annotations

import pytest

from app_helpers import isolated, make_app, settle
from tui.app.chat.search import ChatSearch, find_matches
from tui.app.chat.transcript import ChatView
from tui.context.messages import Message, Provenance
from tui.sessions.model import Session
from tui.sessions.store import save_session
from waiting import eventually


def session_file(tmp_path, count: int):
    messages = []
    for index in range(count):
        role = "user" if index % 2 == 0 else "assistant"
        text = f"message {index} about plain things"
        if index in (3, 7, count - 2):
            text = f"message {index} mentions the HERON launch"
        messages.append(Message(role, text, id=f"m{index}",
                                provenance=Provenance("model" if role == "assistant" else "user", True)))
    path = tmp_path / "many.ctxpane.json"
    save_session(Session(title="many", messages=messages), path)
    return path


async def run_search(pilot, app, query: str) -> ChatView:
    view = app.query_one(ChatView)
    view.focus()
    await pilot.press("slash")
    search = app.query_one(ChatSearch)
    assert search.has_focus
    search.value = query
    await pilot.press("enter")
    await eventually(lambda: view.matches and view.has_focus, 10, f"matches of {query!r}", pilot=pilot)
    return view


async def test_slash_finds_and_n_N_move_between_matches(tmp_path, monkeypatch):
    isolated(monkeypatch, tmp_path)
    app = make_app(tmp_path, offline=True, file=session_file(tmp_path, 12))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        view = await run_search(pilot, app, "heron")
        assert view.matches == [3, 7, 10]
        first = view.selected
        assert first in view.matches
        await pilot.press("n")
        assert view.selected == view.matches[(view.matches.index(first) + 1) % 3]
        await pilot.press("N")
        assert view.selected == first
        rows = [row for row in range(view.size.height)
                if any(seg.text.lower() == "heron" and seg.style and seg.style.bgcolor for seg in view.render_line(row))]
        assert rows, "the match is highlighted on screen"
        await pilot.press("slash")
        await pilot.press("escape")
        await pilot.pause()
        assert not app.query(ChatSearch) and view.search_query == "" and view.has_focus


async def test_typing_slash_or_n_in_the_composer_only_types(tmp_path, monkeypatch):
    isolated(monkeypatch, tmp_path)
    app = make_app(tmp_path, offline=True, file=session_file(tmp_path, 12))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press("slash", "n", "N")
        from tui.app.chat.composer import Composer
        # typed, not searched; a /line is a command, so the pane's draft (what would be sent) is empty
        assert not app.query(ChatSearch) and app.query_one(Composer).text == "/nN" and app.wb.draft == ""


@pytest.mark.timeout(60)  # a hang guard; the search runs in a worker thread, off the loop
def test_searching_ten_thousand_messages_finds_the_one_match():
    messages = [Message("user", f"message {i} " + "lorem ipsum " * 40) for i in range(10_000)]
    messages[9_876] = Message("assistant", "the needle is here")
    assert find_matches(messages, "NEEDLE") == [9_876]


async def test_a_search_in_a_ten_thousand_message_session(tmp_path, monkeypatch):
    isolated(monkeypatch, tmp_path)
    app = make_app(tmp_path, offline=True, file=session_file(tmp_path, 10_000))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        view = await run_search(pilot, app, "heron")
        assert view.matches == [3, 7, 9_998] and view.selected in view.matches
        await pilot.press("N")
        await pilot.pause()
        assert view.selected in view.matches
