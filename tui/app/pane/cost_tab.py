"""Cost: tokens sent per request under the policy, against keep-all, as bars."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from tui.app.pane.cost_amounts import money_text


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
