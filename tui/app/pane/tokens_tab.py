"""Tokens: a bar of the window by what fills it, and the counts, each labelled exact or estimate."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from tui.context.hidden_tokens import HiddenTokens
from tui.context.request import ESTIMATED_PARTS, RequestView

from tui.app.shown import cells as text_cells, one_line

PART_COLORS = {"template overhead": "marker", "fences": "fence", "free": None, "reserved output": "cache",
               "images (estimate)": "tool"}


class TokensView(Static):
    DEFAULT_CSS = "TokensView { padding: 0 1; }"

    def show(self, view: RequestView, window: int | None, reserved: int, roles: dict[str, str],
             reconciled: str = "") -> None:
        counts = view.snapshot.counts
        label = "exact" if counts.exact and not view.image_tokens else "estimate"
        if counts.exact and view.image_tokens:
            label = "text exact, images estimated"
        rows = view.breakdown(window, reserved)
        total = max(1, window or (view.sent_tokens + reserved))
        width = max(10, (self.size.width or 60) - 4)
        bar = Text()
        for name, value in rows:
            cells = round(width * value / total)
            key = PART_COLORS.get(name, name)
            color = roles.get(key, "grey50") if key else "grey23"
            bar.append("█" * cells if key else "░" * cells, style=color)
        head = Text(f"{view.sent_tokens} tokens sent ({label}: {one_line(counts.tokenizer, 80)})")
        head.append(f" · window {window}" if window else " · window unknown")
        if view.budget is not None:
            head.append(f" · budget {view.budget}")
        if counts.content_controls:
            plural = "s" if counts.content_controls != 1 else ""
            head.append(f"\nthe server reads {counts.content_controls} control string{plural} in your text as tokens "
                        "(counted as it reads them; fences would keep them text)", style="bold red")
        if view.summary_cost:
            head.append(f"\nthe summary in this request cost {view.summary_cost} tokens to make (one model call)")
        if view.plan.over_budget:
            head.append("\n⚠ " + one_line(view.plan.warning, 400), style="bold red")
        table = Table(box=None, show_header=True, header_style="bold")
        table.add_column("")
        table.add_column("what")
        table.add_column("tokens", justify="right")
        table.add_column("count")
        for name, value in rows:
            key = PART_COLORS.get(name, name)
            kind = "estimate" if name in ESTIMATED_PARTS or not counts.exact else "exact"
            if name in ("reserved output", "free"):
                kind = "setting"
            table.add_row(Text("■", style=roles.get(key, "grey50") if key else "grey23"), *text_cells([name, value, kind]))
        self.update(Group(head, bar, Text(""), table, *hidden_parts(view.hidden, counts.exact, reconciled)))


TURN_COLUMNS = (("text", "text"), ("template", "tmpl"), ("reasoning", "reason"), ("tool_schema", "schema"),
                ("tool_calls", "calls"), ("tool_results", "results"), ("images", "images"))
LEGEND = ("tmpl: the template's own text · reason: reasoning written · schema: tool schemas · calls: tool calls · "
          "results: tool results · dropped: reasoning the message holds that the template left out")
MAX_TURN_ROWS = 200  # the newest turns; a longer conversation says how many are left out


def hidden_parts(hidden: HiddenTokens, exact: bool, reconciled: str = "") -> list:
    """Per turn: the tokens by what they are (images always an estimate), reasoning the template dropped."""
    if not hidden.turns:
        return []
    label = "text exact" if exact else "estimate"
    images = f"; images: estimate, {one_line(hidden.family, 40)} rule" if hidden.images else ""
    title = Text(f"\nper turn ({label}{images})", style="bold")
    table = Table(box=None, show_header=True, header_style="bold")
    for name in ("turn", "role", *(short for _key, short in TURN_COLUMNS), "dropped"):
        table.add_column(name, justify="left" if name in ("turn", "role") else "right", no_wrap=True)
    shown_turns = hidden.turns[-MAX_TURN_ROWS:]
    for turn in shown_turns:
        name = f"#{turn.turn}" if turn.turn >= 0 else ("summary" if turn.message_id == "summary" else "-")
        values = [turn.counts[key] or "" for key, _short in TURN_COLUMNS]
        table.add_row(*text_cells([name, turn.role, *values, turn.reasoning_dropped or ""]))
    table.add_row(*text_cells(["all", "", *(hidden.total(key) for key, _short in TURN_COLUMNS),
                               hidden.reasoning_dropped or ""]), style="bold")
    parts: list = [title, table, Text(LEGEND, style="dim")]
    if len(hidden.turns) > len(shown_turns):
        parts.append(Text(f"({len(hidden.turns) - len(shown_turns)} earlier turns not listed)", style="dim"))
    for image in hidden.images[:50]:
        line = Text(f"turn #{image.turn}: {one_line(image.label, 120)} = {one_line(image.estimate.how, 120)}")
        if image.placeholder:
            line.append(f"; the template writes {one_line(image.placeholder, 120)} "
                        f"({image.placeholder_tokens} tokens of it in the document)")
        parts.append(line)
    if reconciled:
        parts.append(Text(one_line(reconciled, 400), style="bold"))
    for note in hidden.notes[:20]:
        parts.append(Text("• " + one_line(note, 400), style="yellow"))
    return parts
