"""Diff: this request against the previous one, message by message."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from tui.context.cache.prefix import RequestShape, span_diff

from tui.app.shown import cells, shown_line

STATUS_STYLE = {"same": "dim", "changed": "yellow", "new": "green", "gone": "red strike"}


class DiffView(Static):
    DEFAULT_CSS = "DiffView { padding: 0 1; }"

    def show(self, previous: RequestShape | None, current: RequestShape) -> None:
        if previous is None:
            self.update(Text("no previous request: everything is new", style="dim"))
            return
        table = Table(box=None, header_style="bold", title=shown_line("this request against the previous one, by span"))
        table.add_column("status", min_width=7, no_wrap=True)
        table.add_column("message", min_width=7, no_wrap=True)
        table.add_column("kind", min_width=9, no_wrap=True)
        table.add_column("tokens", min_width=6, justify="right", no_wrap=True)
        table.add_column("text", ratio=1, no_wrap=True, overflow="ellipsis")
        for row in span_diff(previous, current):
            excerpt = row["text"][:80]
            table.add_row(*cells([row["status"], row["message"], row["kind"], row["tokens"], excerpt]),
                          style=STATUS_STYLE[row["status"]])
        self.update(table)
