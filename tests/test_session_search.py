"""Searching the contents of saved sessions: the full-text index (tui/sessions/search_index.py) and the browser."""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path

import pytest

from app_helpers import isolated, make_app, settle
from tui.app.screens.sessions import DEBOUNCE_SECONDS
from tui.context.messages import Message
from tui.sessions import search_index
from tui.sessions.model import Session
from tui.sessions.search_index import Backing, SearchIndex, SearchResult, match_expression
from tui.sessions.store import save_session
from waiting import eventually

SQLITE_HEADER = b"SQLite format 3\x00"


def write(folder: Path, name: str, reply: str, title: str = "", question: str = "what happened?") -> Path:
    path = folder / f"{name}.ctxpane.json"
    session = Session(title=title or f"session {name}",
                      messages=[Message("system", "You are terse."), Message("user", question),
                                Message("assistant", reply)])
    save_session(session, path)
    return path


@pytest.fixture
def folder(tmp_path) -> Path:
    return tmp_path / "sessions"


@pytest.fixture
def index(tmp_path) -> SearchIndex:
    return SearchIndex(tmp_path / "cache" / "search.sqlite")


def found(result: SearchResult) -> list[str]:
    return [hit.path.name for hit in result.hits]


def test_a_word_only_in_a_replys_body_is_found_with_its_snippet_and_message(folder, index):
    write(folder, "a", "The quokka slept under the eucalyptus all afternoon.")
    write(folder, "b", "Nothing about marsupials here.")
    result = index.search(folder, "quokka")
    assert found(result) == ["a.ctxpane.json"]
    hit = result.hits[0]
    assert hit.message == 2 and "quokka" in hit.snippet and hit.title == "session a"
    assert "[" not in hit.snippet  # plain text: no highlight markup for the screen to parse
    assert found(index.search(folder, "quok")) == ["a.ctxpane.json"]  # the last word is a prefix
    assert found(index.search(folder, "Eucalyptus QUOKKA")) == ["a.ctxpane.json"]  # all words, any order
    assert found(index.search(folder, "quokka marsupials")) == []


def test_list_content_and_the_title_are_indexed(folder, index):
    path = folder / "parts.ctxpane.json"
    save_session(Session(title="Harbour plans", messages=[
        Message("user", [{"type": "text", "text": "describe the lighthouse"}]),
        Message("tool", "tide table: high water at noon", tool_call_id="t1")]), path)
    assert index.search(folder, "lighthouse").hits[0].message == 0
    assert index.search(folder, "tide table").hits[0].message == 1
    title_hit = index.search(folder, "harbour").hits[0]
    assert title_hit.message is None and title_hit.snippet == "Harbour plans"


def test_a_changed_file_is_found_by_its_new_words_and_not_its_old(folder, index):
    path = write(folder, "a", "The answer mentions a pangolin.")
    assert found(index.search(folder, "pangolin")) == ["a.ctxpane.json"]
    write(folder, "a", "Now it mentions an armadillo instead.")
    assert found(index.search(folder, "pangolin")) == []
    assert found(index.search(folder, "armadillo")) == [path.name]


def test_a_deleted_file_disappears_from_the_results_and_the_index(folder, index):
    path = write(folder, "a", "A narwhal surfaced.")
    write(folder, "b", "Another narwhal dived.")
    assert sorted(found(index.search(folder, "narwhal"))) == ["a.ctxpane.json", "b.ctxpane.json"]
    path.unlink()
    assert found(index.search(folder, "narwhal")) == ["b.ctxpane.json"]
    with sqlite3.connect(index.path) as db:
        assert [row[0] for row in db.execute("SELECT path FROM files")] == [str(folder / "b.ctxpane.json")]


def test_only_changed_files_are_read_again(folder, index):
    for name in ("a", "b", "c"):
        write(folder, name, f"reply {name} about the heron")
    assert len(index.search(folder, "heron").hits) == 3 and index.loads == 3
    assert len(index.search(folder, "heron").hits) == 3 and index.loads == 3  # nothing changed: nothing read
    write(folder, "b", "reply b about the egret now")
    assert found(index.search(folder, "egret")) == ["b.ctxpane.json"] and index.loads == 4
    assert SearchIndex(index.path).search(folder, "heron").hits  # a new object keeps the file's work


HOSTILE = ['foo" OR bar*', "NEAR(", "NEAR(a b, 2)", "OR", "AND NOT", "-", "- -x", "*", '"', '"""', "^",
           "a:b", "body:x", "col : x", "(", ")", "{a b}", "x" * 10_000, "\x00\x01\x1b[2J", "\u202e\u200b",
           "\ud800lone", "'; DROP TABLE files; --", "\t\n\r", "", "   "]


@pytest.mark.parametrize("query", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_queries_never_raise(folder, index, query):
    write(folder, "a", 'plain text: foo" or bar, and near (a b)')
    result = index.search(folder, query)
    assert result.complete and not result.failed and index.backing is Backing.FILE


def test_an_operator_typed_is_a_word_to_find_not_syntax(folder, index):
    write(folder, "both", "foo or bar")
    write(folder, "one", "only foo here")
    assert match_expression('foo" OR bar*') == '"foo""" "OR" "bar*"*'
    assert found(index.search(folder, 'foo" OR bar*')) == ["both.ctxpane.json"]  # OR is not "either"
    assert found(index.search(folder, "foo -bar")) == ["both.ctxpane.json"]  # nor is - "not"
    assert match_expression("x" * 10_000).count("x") == search_index.MAX_QUERY_CHARS
    assert match_expression("- * ( )") is None


def test_a_corrupted_index_file_is_rebuilt(folder, index):
    write(folder, "a", "A tapir crossed the river.")
    index.path.parent.mkdir(parents=True)
    index.path.write_bytes(b"this is not a database\x00" * 500)
    assert found(index.search(folder, "tapir")) == ["a.ctxpane.json"]
    assert index.path.read_bytes().startswith(SQLITE_HEADER) and index.backing is Backing.FILE


def test_an_index_damaged_inside_is_rebuilt(folder, index):
    for number in range(30):
        write(folder, f"s{number}", f"session {number} about the okapi " + "filler words " * 400)
    assert len(index.search(folder, "okapi").hits) == 30
    damaged = bytearray(index.path.read_bytes())
    damaged[4096:] = b"\xff" * (len(damaged) - 4096)  # every page after the first
    index.path.write_bytes(bytes(damaged))
    assert len(index.search(folder, "okapi").hits) == 30 and index.backing is Backing.FILE
    with sqlite3.connect(index.path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_an_index_of_another_layout_is_made_again(folder, index):
    write(folder, "a", "A wombat dug.")
    index.path.parent.mkdir(parents=True)
    with sqlite3.connect(index.path) as db:
        db.execute("CREATE TABLE files (name TEXT)")
    assert found(index.search(folder, "wombat")) == ["a.ctxpane.json"] and index.backing is Backing.FILE


def test_a_cache_folder_that_cannot_be_made_falls_back_to_memory(folder, tmp_path):
    write(folder, "a", "A lemur leapt.")
    (tmp_path / "not-a-folder").write_text("a file where the cache folder would be")
    index = SearchIndex(tmp_path / "not-a-folder" / "search.sqlite")
    assert found(index.search(folder, "lemur")) == ["a.ctxpane.json"] and index.backing is Backing.MEMORY
    assert found(index.search(folder, "lemur")) == ["a.ctxpane.json"] and index.loads == 1  # kept in memory


def test_an_index_locked_by_another_process_gives_way_to_memory(folder, index, monkeypatch):
    monkeypatch.setattr(search_index, "BUSY_SECONDS", 0.1)
    write(folder, "a", "A gecko climbed.")
    index.search(folder, "gecko")
    holder = sqlite3.connect(index.path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        assert found(index.search(folder, "gecko")) == ["a.ctxpane.json"] and index.backing is Backing.MEMORY
    finally:
        holder.close()


def test_a_file_over_the_size_limit_is_skipped_and_reported(folder, tmp_path):
    big = write(folder, "big", "the capybara " * 2000)
    write(folder, "small", "a small capybara")
    index = SearchIndex(tmp_path / "search.sqlite", max_file_bytes=big.stat().st_size - 1)
    result = index.search(folder, "capybara")
    assert found(result) == ["small.ctxpane.json"] and result.too_large == [big] and index.loads == 1
    assert index.search(folder, "capybara").too_large == [big] and index.loads == 1  # not tried again


def test_text_past_the_per_session_limit_is_not_indexed(folder, tmp_path):
    write(folder, "long", "early words " * 100 + "the late axolotl")
    index = SearchIndex(tmp_path / "search.sqlite", max_session_chars=500)
    assert found(index.search(folder, "early")) == ["long.ctxpane.json"]
    assert found(index.search(folder, "axolotl")) == []


def test_results_are_capped(folder, tmp_path):
    for name in "abcde":
        write(folder, name, "an ibis again")
    assert len(SearchIndex(tmp_path / "search.sqlite", max_hits=3).search(folder, "ibis").hits) == 3


def test_a_session_file_that_does_not_load_is_skipped(folder, index):
    write(folder, "good", "the jackal ran")
    folder.joinpath("bad.ctxpane.json").write_text('{"format": "ctxpane-session", "messages": [jackal')
    os.mkfifo(folder / "fifo.ctxpane.json")  # never opened: a search must not wait on it
    result = index.search(folder, "jackal")
    assert found(result) == ["good.ctxpane.json"] and result.unreadable == 1


def test_the_index_file_is_private_and_lives_in_the_cache_folder(folder, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    index = SearchIndex()
    write(folder, "a", "a dingo")
    index.search(folder, "dingo")
    assert index.path == tmp_path / "xdg-cache" / "ctxpane" / "search.sqlite"
    assert index.path.stat().st_mode & 0o777 == 0o600


def test_a_cancelled_search_keeps_what_it_indexed_and_says_it_is_incomplete(folder, index):
    for name in "abcd":
        write(folder, name, "the marten hides")
    seen = []
    result = index.search(folder, "marten", progress=lambda done, total: seen.append((done, total)),
                          cancelled=lambda: len(seen) >= 2)
    assert not result.complete and result.hits == [] and seen == [(0, 4), (1, 4)] and index.loads == 2
    assert len(index.search(folder, "marten").hits) == 4 and index.loads == 4  # only the other two read now


def test_folders_are_kept_apart(tmp_path, index):
    write(tmp_path / "one", "a", "a kiwi")
    write(tmp_path / "two", "a", "another kiwi")
    assert [hit.path.parent.name for hit in index.search(tmp_path / "one", "kiwi").hits] == ["one"]
    assert [hit.path.parent.name for hit in index.search(tmp_path / "two", "kiwi").hits] == ["two"]


# -- the browser ------------------------------------------------------------------------------------------------


def table_rows(browser) -> list[list[str]]:
    table = browser.query_one("#browser-table")
    return [[cell.plain for cell in table.get_row_at(row)] for row in range(table.row_count)]


async def open_browser(app, pilot):
    from tui.app.screens.sessions import BrowserScreen
    await settle(pilot, app)
    app.action_open_session()
    await settle(pilot, app)
    assert isinstance(app.screen, BrowserScreen)
    return app.screen


async def test_the_browser_finds_a_word_in_a_messages_body_and_shows_the_snippet(tmp_path, monkeypatch):
    isolated(monkeypatch, tmp_path)
    folder = tmp_path / "sessions"
    write(folder, "plain", "Nothing to see here.", title="Shopping list")
    write(folder, "body", "We watched a [bold]pelican[/bold] dive.\x1b[2J\nThen lunch.", title="Weekend")
    write(folder, "titled", "no birds", title="pelican notes")
    app = make_app(tmp_path, offline=True)
    async with app.run_test(size=(160, 40)) as pilot:
        browser = await open_browser(app, pilot)
        browser.query_one("#browser-search").value = "pelican"
        await pilot.pause()
        titles = [info["title"] for _, info in browser.rows]
        assert titles[0] == "pelican notes" and "Shopping list" not in titles  # titles at once
        await eventually(lambda: len(browser.rows) == 2, 15, pilot=pilot)
        await app.workers.wait_for_complete()
        rows = table_rows(browser)
        assert [row[0] for row in rows] == ["pelican notes", "Weekend"]  # title matches first, no duplicate
        assert rows[1][3] == "body.ctxpane.json"
        assert rows[1][4].startswith("#2: ") and "[bold]pelican[/bold] dive." in rows[1][4]
        assert "↵Then lunch." in rows[1][4] and "\x1b" not in rows[1][4]  # one line, nothing raw
        assert "contents: 2 sessions match" in str(browser.query_one("#browser-status").render())
        assert (tmp_path / "xdg_cache_home" / "ctxpane" / "search.sqlite").exists()
        browser.query_one("#browser-search").value = "pe"  # under three characters: titles only
        await pilot.pause(DEBOUNCE_SECONDS + 0.2)  # an absence: a content search would have started by now
        await app.workers.wait_for_complete()
        assert [info["title"] for _, info in browser.rows] == ["pelican notes"]
        browser.query_one("#browser-search").value = "pelican"
        await eventually(lambda: len(browser.rows) == 2, 15, pilot=pilot)
        browser.query_one("#browser-table").move_cursor(row=1)
        browser.action_open()
        await eventually(lambda: app.session_file == folder / "body.ctxpane.json", 15, pilot=pilot)


async def test_a_stale_content_result_is_dropped(tmp_path, monkeypatch):
    from tui.app.screens.sessions import ContentFound
    from tui.sessions.search_index import Hit
    isolated(monkeypatch, tmp_path)
    folder = tmp_path / "sessions"
    path = write(folder, "a", "a heron", title="Birds")
    app = make_app(tmp_path, offline=True)
    async with app.run_test(size=(160, 40)) as pilot:
        browser = await open_browser(app, pilot)
        browser.query_one("#browser-search").value = "zzz"
        await pilot.pause()
        browser.on_content_found(ContentFound("heron", SearchResult(hits=[Hit(path, "Birds", "a heron", 1)])))
        assert browser.rows == [] and table_rows(browser) == []
        browser.on_content_found(ContentFound("zzz", SearchResult(hits=[Hit(path, "Birds", "a heron", 1)])))
        assert [p for p, _ in browser.rows] == [path]


class SlowIndex(SearchIndex):
    """Reports progress, then waits for the test before answering: the label is seen while it indexes."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.release = threading.Event()

    def search(self, folder, query, progress=None, cancelled=None):
        progress(40, 300)
        self.release.wait(10)
        return super().search(folder, query, None, cancelled)


async def test_the_browser_shows_indexing_progress(tmp_path, monkeypatch):
    from tui.app.screens.sessions import BrowserScreen
    isolated(monkeypatch, tmp_path)
    folder = tmp_path / "sessions"
    write(folder, "a", "an albatross", title="Sea")
    index = SlowIndex(tmp_path / "search.sqlite")
    app = make_app(tmp_path, offline=True)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot, app)
        browser = BrowserScreen(folder, index=index)
        await app.push_screen(browser)
        await settle(pilot, app)
        browser.query_one("#browser-search").value = "albatross"

        def status() -> str:
            return str(browser.query_one("#browser-status").render())
        try:
            await eventually(lambda: "indexing 40/300 session files…" in status(), 15, pilot=pilot)
        finally:
            index.release.set()
        await eventually(lambda: "contents: 1 session match" in status(), 15, pilot=pilot)
        assert table_rows(browser)[0][4] == "#2: an albatross"
