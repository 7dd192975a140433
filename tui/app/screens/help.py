"""F1: every key the app answers to, as currently mapped."""

from __future__ import annotations

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from tui.app.shown import cells, shown_line


class HelpScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 90; max-width: 95%; height: 80%; border: thick $primary; background: $surface; padding: 1 2; }
    """
    BINDINGS = [Binding("escape,f1,q", "dismiss", "Close")]

    def __init__(self, rows: list[tuple[str, str, str]]) -> None:
        super().__init__()
        self.rows = rows

    def compose(self) -> ComposeResult:
        table = Table(title=shown_line("ctxpane keys (remap them under [keys] in config.toml)"), box=None, header_style="bold")
        table.add_column("key")
        table.add_column("action")
        table.add_column("where")
        for key, description, where in self.rows:
            table.add_row(*cells([key, description, where]))
        with VerticalScroll():
            yield Static(table)
            yield Static(shown_line("") + "\nEvery action is also in the command palette (ctrl+p). Esc closes this screen.")
