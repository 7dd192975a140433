"""Ledger: every message the policy left out of the request, why, and since when; plus a search."""

from __future__ import annotations

import time

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Input, Static
from textual.worker import get_current_worker

from tui.context.drop_notes import entry_name
from tui.context.policy.window_search import WindowSearch
from tui.context.policy.truncation import still_in_window
from tui.context.request import RequestView
from tui.context.untrusted.visible import visible
from tui.sessions.window_sources import searched_session

from tui.app.pane.window_lines import window_lines
from tui.app.safe_inputs import SafeInput
from tui.app.shown import cells, one_line


SEARCH_SECONDS = 10.0  # a search of every request stops starting new ones after this (a session of 5,000 requests)


class LedgerView(Vertical):
    DEFAULT_CSS = """
    LedgerView { padding: 0 1; }
    LedgerView Input { margin: 1 0 0 0; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._view: RequestView | None = None
        self._texts: list[str] = []
        self._requests: list | tuple = ()
        self._messages: list = []

    def compose(self) -> ComposeResult:
        yield Static(id="ledger-table")
        yield Static(id="ledger-trust")
        yield SafeInput(placeholder="is this text still in the window? type to search", id="ledger-search")
        yield Static(id="ledger-hits")
        yield Static(id="ledger-windows")

    def show(self, view: RequestView, texts: list[str], requests: list | tuple = (),
             messages: list | None = None) -> None:
        self._view, self._texts = view, texts
        self._requests, self._messages = requests, list(messages) if messages is not None else []
        if view.curation is not None:
            table = curation_table(view, messages)
        elif not view.ledger:
            table = Text(f"nothing dropped: policy {view.plan.kept and 'keeps every message' or ''}", style="dim")
        else:
            table = Table(box=None, header_style="bold")
            for column in ("message", "role", "tokens", "policy", "since", "reason"):
                table.add_column(column)
            for entry in view.ledger:
                name = entry_name(entry, messages) if messages is not None else f"#{entry.message}"
                table.add_row(*cells([name, entry.role, entry.tokens, entry.policy,
                                      f"request {entry.since_request}", entry.reason]), style="strike")
        if view.summary_line():
            table = Group(table, Text(view.summary_line(), style="bold"))
        received = received_lines(requests)
        self.query_one("#ledger-table", Static).update(Group(received, table) if received.plain else table)
        self.query_one("#ledger-trust", Static).update(trust_lines(view, messages))
        self._search(self.query_one("#ledger-search", Input).value)

    def on_input_changed(self, event: Input.Changed) -> None:
        self._search(event.value)

    def _search(self, query: str) -> None:
        hits_widget = self.query_one("#ledger-hits", Static)
        if not query or self._view is None:
            self.workers.cancel_group(self, "window-search")  # a search still running would land after this
            hits_widget.update("")
            self.query_one("#ledger-windows", Static).update("")
            return
        self._search_windows(query, self._view, self._requests, self._messages)
        hits = still_in_window(self._texts, self._view.plan, query)
        if not hits:
            hits_widget.update(Text("not found in any message", style="dim"))
            return
        out = Text()
        for hit in hits:
            if hit["kept"]:
                out.append(f"#{hit['message']}: in the window\n", style="green")
            else:
                out.append(one_line(f"#{hit['message']}: DROPPED ({hit['policy']}: {hit['reason']})") + "\n", style="red")
        hits_widget.update(out)


    @work(thread=True, exclusive=True, group="window-search")
    def _search_windows(self, query: str, view: RequestView, requests: list | tuple, messages: list) -> None:
        """Every request of the session searched off the loop, newest first, for at most SEARCH_SECONDS (older
        requests past that are said unsearched); a newer query cancels this one between requests."""
        worker, deadline = get_current_worker(), time.monotonic() + SEARCH_SECONDS
        result = searched_session(query, list(requests), view, messages,
                                  cancelled=lambda: worker.is_cancelled or time.monotonic() > deadline)
        if not worker.is_cancelled:
            self.app.call_from_thread(self._show_windows, query, result)

    def _show_windows(self, query: str, result: WindowSearch) -> None:
        if self.query_one("#ledger-search", Input).value == query:  # (the box may have changed meanwhile)
            self.query_one("#ledger-windows", Static).update(window_lines(result))


CURATED_SHOWN = 200  # the newest messages whose verdict is listed (a long session says how many more)
CURATED_STYLES = {"pinned": "bold", "question": "bold", "kept": "", "trimmed": "yellow", "superseded": "strike",
                  "dropped": "strike"}


def curation_table(view: RequestView, messages: list | None) -> Group:
    """The curated policy's verdict on every message: kept, trimmed (which lines), superseded (by which #N) or
    dropped, with its relevance score; above it, the budget's lines."""
    curation = view.curation
    table = Table(box=None, header_style="bold")
    for column in ("message", "verdict", "tokens", "score", "why"):
        table.add_column(column)
    shown = curation.entries[-CURATED_SHOWN:]
    for entry in shown:
        message = messages[entry.index] if messages is not None and entry.index < len(messages) else None
        name = f"#{entry.index} {message.role}" if message is not None else f"#{entry.index}"
        table.add_row(*cells([name, entry.verdict.value, entry.tokens, f"{entry.score:g}", entry.reason]),
                      style=CURATED_STYLES[entry.verdict.value])
    head = Text(f"curated: budget {curation.budget}; pinned and question {curation.pinned_tokens} tokens; packed "
                f"{curation.packed_tokens} by relevance to the question (BM25; a tie: the newest first)", style="bold")
    more = len(curation.entries) - len(shown)
    if more:
        head.append(f"\n({more} older messages not listed)", style="dim")
    return Group(head, table)


TRUST_SHOWN = 200  # the newest messages whose standing is listed (a long session says how many more)


def trust_lines(view: RequestView, messages: list | None) -> Text:
    """Each message's kind by provenance, whether it is trusted, and why (tui/context/trust.py), newest last."""
    out = Text("\ntrust by provenance\n", style="bold")
    standings = list(enumerate(view.trust))
    if len(standings) > TRUST_SHOWN:
        out.append(f"({len(standings) - TRUST_SHOWN} older messages not listed)\n", style="dim")
    for index, standing in standings[-TRUST_SHOWN:]:
        role = messages[index].role if messages is not None and index < len(messages) else ""
        out.append(one_line(f"#{index} {role}: {standing.line()}") + "\n",
                   style="" if standing.trusted else "yellow")
    return out


LOUD = ("dropped", "added", "refused")


def received_lines(requests: list | tuple) -> Text:
    """What the server did not process as sent, request by request (from each record's receipt), newest last."""
    out = Text()
    for record in requests:
        received = getattr(record, "received", None) or {}
        if received.get("verdict") in LOUD:
            out.append(one_line(f"request {record.number}: {visible(received.get('summary', ''))}", 2000) + "\n",
                       style="bold red")
    if out.plain:
        out = Text("sent vs received\n", style="bold") + out
    return out
