"""The session browser: list, search, open, rename, delete (with confirmation).

The search box filters titles as it is typed; from three characters on it also searches the sessions'
contents (tui/sessions/search_index.py) in a worker thread, a moment after the typing stops, and adds
the sessions found there below the title matches with the text around the match.
"""

from __future__ import annotations

import time
from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widgets import DataTable, Input, Label
from textual.worker import get_current_worker

from tui.context.untrusted.visible import visible
from tui.sessions.search_index import Hit, SearchIndex, SearchResult
from tui.sessions.store import SessionFileError, list_sessions, retitle_session

from tui.controller.titling import clean_title

from tui.app.screens.confirm import ConfirmScreen
from tui.app.screens.edit import EditScreen
from tui.app.safe_inputs import SafeInput
from tui.app.shown import cells, one_line, shown_line

CONTENT_MIN_CHARS = 3  # shorter words match nearly every session: titles only
DEBOUNCE_SECONDS = 0.3  # a search per pause in the typing, not per key
PROGRESS_EVERY = 0.1  # seconds between "indexing n/m" updates from the worker
SNIPPET_CHARS = 90


class ContentFound(Message):
    """A content search ended (posted from the worker thread)."""

    def __init__(self, query: str, result: SearchResult) -> None:
        super().__init__()
        self.query, self.result = query, result


class Indexing(Message):
    """The worker re-reads changed session files: `done` of `total`."""

    def __init__(self, query: str, done: int, total: int) -> None:
        super().__init__()
        self.query, self.done, self.total = query, done, total


class SessionTable(DataTable):
    """The list of sessions: its own letter keys, so the search box types every letter (n, x) it is given."""

    BINDINGS = [Binding("n", "screen.rename", "Rename", show=False),
                Binding("delete,x", "screen.delete", "Delete", show=False)]


def found_cell(hit: Hit) -> str:
    where = "title" if hit.message is None else f"#{hit.message}"
    return f"{where}: {hit.snippet}"


class BrowserScreen(ModalScreen[Path | None]):
    DEFAULT_CSS = """
    BrowserScreen { align: center middle; }
    BrowserScreen > Vertical { width: 140; max-width: 95%; height: 80%; border: thick $primary; background: $surface; padding: 1; }
    BrowserScreen DataTable { height: 1fr; }
    BrowserScreen #browser-status { color: $text-muted; }
    """
    # The list has the focus from the moment the screen is shown (a focus() in on_mount came after the first
    # frame: a Shift+Tab typed on seeing the screen moved to the search box, then the list took the focus back).
    AUTO_FOCUS = "#browser-table"
    # n and x where the list has the keys; F2 and F8 also from the search box, where letters are typed
    BINDINGS = [Binding("escape", "cancel", "Close"), Binding("enter", "open", "Open", show=True),
                Binding("f2", "rename", "Rename"), Binding("f8", "delete", "Delete")]

    def __init__(self, folder: Path, current: Path | None = None, index: SearchIndex | None = None) -> None:
        super().__init__()
        self.folder, self.current = folder, current
        self.index = index or SearchIndex()
        self.listing: list[tuple[Path, dict]] = []  # read once per change, not once per key typed
        self.rows: list[tuple[Path, dict]] = []
        self.found: dict[Path, Hit] = {}  # content matches of `found_query`, newest first
        self.found_query = ""
        self._debounce: Timer | None = None

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(shown_line(f"Sessions in {self.folder}  (enter open · n or F2 rename · x, Del or F8 delete · "
                                   "esc close; in the search box only F2 and F8)", limit=400))
            yield SafeInput(placeholder=f"search titles; contents too from {CONTENT_MIN_CHARS} characters",
                            id="browser-search")
            yield Label("", id="browser-status")
            yield SessionTable(id="browser-table", cursor_type="row")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("title", "updated", "messages", "file", "found")
        self.relist()

    def relist(self) -> None:
        """Read the folder again (after a rename or delete) and show the current query's rows."""
        self.listing = list_sessions(self.folder)
        self.reload(self._query())

    def _query(self) -> str:
        return self.query_one(Input).value

    def reload(self, query: str = "") -> None:
        """Title matches first, then the sessions whose contents match (when that search is for this query)."""
        rows = [(p, info) for p, info in self.listing if query.lower() in info["title"].lower()]
        if self.found_query == query:
            listed, titled = dict(self.listing), {p for p, _ in rows}
            rows += [(p, listed[p]) for p in self.found if p in listed and p not in titled]
        self._show_rows(rows)

    def _show_rows(self, rows: list[tuple[Path, dict]]) -> None:
        table = self.query_one(DataTable)
        selected = self._selected()  # kept when content rows arrive under the cursor
        self.rows = rows
        table.clear()
        for path, info in rows:
            title = one_line(info["title"], 120) + (" (unreadable)" if info["error"] else "")
            hit = self.found.get(path) if self.found_query == self._query() else None
            found = one_line(found_cell(hit), SNIPPET_CHARS) if hit else ""
            table.add_row(*cells([title, info["updated"][:16], info["messages"], path.name, found]))
        paths = [path for path, _ in rows]
        if selected in paths:
            table.move_cursor(row=paths.index(selected))

    def on_input_changed(self, event: Input.Changed) -> None:
        self.reload(event.value)
        self._schedule_content_search(event.value)

    # -- the content search ----------------------------------------------------------------------------------

    def _schedule_content_search(self, query: str) -> None:
        if self._debounce is not None:
            self._debounce.stop()
        self.workers.cancel_group(self, "content-search")  # its result would be stale: let it stop between files
        if len(query.strip()) < CONTENT_MIN_CHARS:
            self._status("")
            return
        self._debounce = self.set_timer(DEBOUNCE_SECONDS, lambda: self._start_content_search(query))

    def _start_content_search(self, query: str) -> None:
        if query != self._query():
            return
        self._status("searching contents…")
        self.run_worker(lambda: self._search_contents(query), thread=True, exclusive=True,
                        group="content-search", exit_on_error=False)

    def _search_contents(self, query: str) -> None:
        """In the worker thread: bring the index up to date and search it; the result goes back as a message."""
        worker, last_posted = get_current_worker(), 0.0

        def progress(done: int, total: int) -> None:
            nonlocal last_posted
            if time.monotonic() - last_posted >= PROGRESS_EVERY:
                last_posted = time.monotonic()
                self.post_message(Indexing(query, done, total))
        result = self.index.search(self.folder, query, progress, lambda: worker.is_cancelled)
        if not worker.is_cancelled:
            self.post_message(ContentFound(query, result))

    def on_indexing(self, event: Indexing) -> None:
        if event.query == self._query():
            self._status(f"indexing {event.done:,}/{event.total:,} session files…")

    def on_content_found(self, event: ContentFound) -> None:
        if event.query != self._query() or not event.result.complete:
            return  # typed on since: a newer search is on its way
        self.found_query, self.found = event.query, {hit.path: hit for hit in event.result.hits}
        self._status(self._summary(event.result))
        self.reload(event.query)

    def _summary(self, result: SearchResult) -> str:
        if result.failed:
            return "contents could not be searched (no index could be made)"
        parts = [f"contents: {len(result.hits):,} session{'s' if len(result.hits) != 1 else ''} match"
                 + (f" (the newest {len(result.hits):,} shown)" if len(result.hits) >= self.index.max_hits else "")]
        if result.too_large:
            names = ", ".join(path.name for path in result.too_large[:3])
            more = f" and {len(result.too_large) - 3:,} more" if len(result.too_large) > 3 else ""
            parts.append(f"not indexed, too large: {names}{more}")
        return " · ".join(parts)

    def _status(self, text: str) -> None:
        self.query_one("#browser-status", Label).update(shown_line(text, limit=400))

    # -- the keys --------------------------------------------------------------------------------------------

    def _selected(self) -> Path | None:
        table = self.query_one(DataTable)
        if not self.rows or table.cursor_row is None or table.cursor_row >= len(self.rows):
            return None
        return self.rows[table.cursor_row][0]

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.action_open()

    def action_open(self) -> None:
        path = self._selected()
        if path is not None:
            self.dismiss(path)

    def action_rename(self) -> None:
        """A new title for the selected session. The title shown comes from the listing; the file is read again,
        under its lock, only when the new title is written (tui/sessions/store.py retitle_session)."""
        path = self._selected()
        if path is None:
            return
        info = dict(self.listing).get(path, {})
        if info.get("error"):
            self.notify(visible(info["error"]), severity="error", markup=False)
            return
        if path == self.current:
            self.notify("this session is open here: rename it with Rename session (Ctrl+P)", severity="warning",
                        markup=False)
            return

        def done(result) -> None:
            if result is not None and result[0].strip():
                self._retitle(path, clean_title(result[0]))
        self.app.push_screen(EditScreen("New title", one_line(info.get("title", ""), 200)), done)

    def _retitle(self, path: Path, title: str) -> None:
        try:
            retitle_session(path, title)
        except SessionFileError as exc:  # another ctxpane holds it (named), or the file cannot be read
            self.notify(visible(f"not renamed: {exc}"), severity="warning", markup=False)
            return
        self.relist()

    def action_delete(self) -> None:
        path = self._selected()
        if path is None:
            return
        if path == self.current:
            self.notify("this session is open: it cannot be deleted now", severity="warning", markup=False)
            return

        def done(yes: bool) -> None:
            if yes:
                path.unlink(missing_ok=True)
                self.relist()
        self.app.push_screen(ConfirmScreen(f"Delete {path.name}? This cannot be undone."), done)

    def action_cancel(self) -> None:
        self.dismiss(None)
