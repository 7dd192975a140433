"""The session browser: list, search, open, rename, delete (with confirmation)."""

from __future__ import annotations

from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Input, Label

from tui.context.safety import visible
from tui.sessions.store import SessionFileError, list_sessions, load_session, save_session

from .confirm_screen import ConfirmScreen
from .edit_screen import EditScreen
from .safe_inputs import SafeInput
from .shown import cells, one_line, shown_line


class SessionTable(DataTable):
    """The list of sessions: its own letter keys, so the search box types every letter (n, x) it is given."""

    BINDINGS = [Binding("n", "screen.rename", "Rename", show=False),
                Binding("delete,x", "screen.delete", "Delete", show=False)]


class BrowserScreen(ModalScreen[Path | None]):
    DEFAULT_CSS = """
    BrowserScreen { align: center middle; }
    BrowserScreen > Vertical { width: 110; max-width: 95%; height: 80%; border: thick $primary; background: $surface; padding: 1; }
    BrowserScreen DataTable { height: 1fr; }
    """
    # n and x where the list has the keys; F2 and F8 also from the search box, where letters are typed
    BINDINGS = [Binding("escape", "cancel", "Close"), Binding("enter", "open", "Open", show=True),
                Binding("f2", "rename", "Rename"), Binding("f8", "delete", "Delete")]

    def __init__(self, folder: Path, current: Path | None = None) -> None:
        super().__init__()
        self.folder, self.current = folder, current
        self.rows: list[tuple[Path, dict]] = []

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(shown_line(f"Sessions in {self.folder}  (enter open · n or F2 rename · x, Del or F8 delete · "
                                   "esc close; in the search box only F2 and F8)", limit=400))
            yield SafeInput(placeholder="search titles", id="browser-search")
            yield SessionTable(id="browser-table", cursor_type="row")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("title", "updated", "messages", "file")
        self.reload()
        table.focus()

    def reload(self, query: str = "") -> None:
        self.rows = [(p, info) for p, info in list_sessions(self.folder)
                     if query.lower() in info["title"].lower()]
        table = self.query_one(DataTable)
        table.clear()
        for path, info in self.rows:
            title = one_line(info["title"], 120) + (" (unreadable)" if info["error"] else "")
            table.add_row(*cells([title, info["updated"][:16], info["messages"], path.name]))

    def on_input_changed(self, event: Input.Changed) -> None:
        self.reload(event.value)

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
        path = self._selected()
        if path is None:
            return
        try:
            opened = load_session(path)
        except SessionFileError as exc:
            self.notify(visible(str(exc)), severity="error", markup=False)
            return
        if opened.read_only or path == self.current:
            self.notify("this session is open or read-only: rename it from where it is open", severity="warning", markup=False)
            return

        def done(result) -> None:
            if result is not None and result[0].strip():
                opened.session.title = result[0].strip().splitlines()[0][:200]
                save_session(opened.session, path)
                self.reload(self.query_one(Input).value)
        self.app.push_screen(EditScreen("New title", one_line(opened.session.title, 200)), done)

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
                self.reload(self.query_one(Input).value)
        self.app.push_screen(ConfirmScreen(f"Delete {path.name}? This cannot be undone."), done)

    def action_cancel(self) -> None:
        self.dismiss(None)
