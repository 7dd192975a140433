"""`/context`: what fills the window as a grid of cells, a cell a hundredth of it, and each kind's tokens."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

from tui.context.context_grid import ContextGrid, Kind

from tui.app.shown import cells

ROLE_OF = {Kind.SYSTEM: "system", Kind.TOOLS: "tool", Kind.MESSAGES: "user", Kind.RESERVED: "cache"}
FALLBACK = {Kind.SYSTEM: "magenta", Kind.TOOLS: "yellow", Kind.MESSAGES: "green", Kind.RESERVED: "cyan",
            Kind.FREE: "grey35"}
ROW = 10


class ContextScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    ContextScreen { align: center middle; }
    ContextScreen > Vertical { width: 64; max-width: 95%; height: auto; border: thick $primary;
                               background: $surface; padding: 1 2; }
    """
    BINDINGS = [Binding("escape,q,enter", "dismiss", "Close")]

    def __init__(self, grid: ContextGrid, exact: bool, roles: dict[str, str]) -> None:
        super().__init__()
        self.grid, self.exact, self.roles = grid, exact, roles

    def colour(self, kind: Kind) -> str:
        return self.roles.get(ROLE_OF.get(kind, ""), "") or FALLBACK[kind]

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(self.title_line())
            yield Static(self.cells_text())
            yield Static(self.legend())
            yield Static(Text("Esc closes · the Tokens tab shows each role and part", style="dim"))

    def title_line(self) -> Text:
        grid = self.grid
        window = f"of a {grid.window:,}-token window" if grid.window else "(window unknown: of what is sent)"
        line = Text(f"Context {window}, {'exact' if self.exact else 'estimated'} counts", style="bold")
        if grid.over:
            line.append(f"\n⚠ {grid.over:,} tokens past the window: the policy must drop turns", style="bold red")
        return line

    def cells_text(self) -> Text:
        text = Text()
        for place, kind in enumerate(self.grid.cells()):
            text.append("□ " if kind is Kind.FREE else "■ ", style=self.colour(kind))
            if place % ROW == ROW - 1:
                text.append("\n")
        return text

    def legend(self) -> Table:
        table = Table(box=None, show_header=False, padding=(0, 1))
        table.add_column()
        table.add_column(min_width=9)
        table.add_column(justify="right", min_width=8)
        table.add_column(justify="right", min_width=5)
        total = sum(part.tokens for part in self.grid.parts) or 1
        for part in self.grid.parts:
            share = f"{part.tokens / total:.0%}"
            table.add_row(Text("□" if part.kind is Kind.FREE else "■", style=self.colour(part.kind)),
                          *cells([part.kind.value, f"{part.tokens:,}", share]))
        return table
