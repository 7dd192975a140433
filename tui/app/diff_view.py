"""Diff: this request against the previous one, message by message."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from tui.context.cache import RequestShape, message_diff

STATUS_STYLE = {"same": "dim", "changed": "yellow", "new": "green", "gone": "red strike"}


class DiffView(Static):
    DEFAULT_CSS = "DiffView { padding: 0 1; }"

    def show(self, previous: RequestShape | None, current: RequestShape) -> None:
        if previous is None:
            self.update(Text("no previous request: everything is new", style="dim"))
            return
        table = Table(box=None, header_style="bold")
        for column in ("message", "role", "status", "chars"):
            table.add_column(column)
        for row in message_diff(previous, current):
            table.add_row(row["id"], row["role"], row["status"], str(row["chars"]), style=STATUS_STYLE[row["status"]])
        self.update(table)
