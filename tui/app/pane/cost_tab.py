"""Cost: tokens sent per request under the policy against keep-all, as a chart (per request and cumulative) and as
bars with their figures and money."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from tui.app.pane.cost_amounts import money_text


CHART_ROWS = 12  # each of the two plots, stacked (the pane is narrow)


class CostTab(Vertical):
    """The Cost tab: the chart above the figures."""

    DEFAULT_CSS = "CostTab { height: auto; }"

    def compose(self) -> ComposeResult:
        yield CostChart(id="cost-chart")
        yield CostView(id="cost-figures")

    def show(self, rows: list[dict], pending: tuple[int, int], roles: dict[str, str], requests=()) -> None:
        self.query_one(CostChart).show(rows, pending)
        self.query_one(CostView).show(rows, pending, roles, requests)


class CostChart(Vertical):
    """Tokens sent per request and in all, under the policy and under keep-all: two plots (textual-plotext, loaded
    with the first chart, not at start-up). Only figures and this module's own labels are drawn."""

    DEFAULT_CSS = "CostChart { height: auto; }"

    def show(self, rows: list[dict], pending: tuple[int, int]) -> None:
        from textual_plotext import PlotextPlot

        self._latest = (rows, pending)  # what a deferred first draw draws: the newest, not what it was called with
        if not self.children:
            plots = [PlotextPlot(classes="per-request"), PlotextPlot(classes="in-all")]
            for plot in plots:
                plot.styles.height = CHART_ROWS
            self.mount_all(plots)
            self.call_after_refresh(lambda: self.show(*self._latest))  # drawn once mounted
            return
        sent = [int(r["sent"]) for r in rows] + [int(pending[0])]
        keep_all = [int(r["keep_all"]) for r in rows] + [int(pending[1])]
        for plot, (title, ours, theirs) in zip(self.query(PlotextPlot), (
                ("tokens per request (the last: the next)", sent, keep_all),
                ("tokens sent in all", cumulative(sent), cumulative(keep_all)))):
            draw(plot.plt, title, ours, theirs)
            plot.refresh()


def draw(plt, title: str, ours: list[int], theirs: list[int]) -> None:
    numbers = list(range(1, len(ours) + 1))
    plt.clear_data()
    plt.title(title)
    plt.plot(numbers, theirs, label="keep-all", marker="braille")
    plt.plot(numbers, ours, label="policy", marker="braille")
    plt.xlabel("request")


def cumulative(values: list[int]) -> list[int]:
    out, total = [], 0
    for value in values:
        total += value
        out.append(total)
    return out


class CostView(Static):
    DEFAULT_CSS = "CostView { padding: 0 1; }"

    def show(self, rows: list[dict], pending: tuple[int, int], roles: dict[str, str], requests=()) -> None:
        rows = rows + [{"request": len(rows) + 1, "sent": pending[0], "keep_all": pending[1], "next": True}]
        top = max(max(r["keep_all"], r["sent"]) for r in rows) or 1
        width = max(10, (self.size.width or 60) - 24)
        out = Text("tokens per request: ", style="bold")
        out.append("■ sent", style=roles.get("assistant", "cyan"))
        out.append("  ■ keep-all\n", style=roles.get("dropped", "grey50"))
        for row in rows[-30:]:
            label = "next" if row.get("next") else f"#{row['request']}"
            out.append(f"{label:>5} ")
            out.append("█" * max(1, round(width * row["sent"] / top)), style=roles.get("assistant", "cyan"))
            out.append(f" {row['sent']}\n")
            out.append("      ")
            out.append("█" * max(1, round(width * row["keep_all"] / top)), style=roles.get("dropped", "grey50"))
            out.append(f" {row['keep_all']}\n")
        sent = sum(r["sent"] for r in rows if not r.get("next"))
        keep_all = sum(r["keep_all"] for r in rows if not r.get("next"))
        out.append(f"\nso far: {sent} tokens sent; keep-all would have sent {keep_all}", style="bold")
        self.update(out + money_text(requests, roles))
