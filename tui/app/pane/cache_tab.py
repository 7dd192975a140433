"""Cache: per request, the cached tokens predicted and reported, and the cause of the last break."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from tui.context.cache.history import is_summary_call, request_name
from tui.context.cache.predict import provider_diagnosis
from tui.context.cache.rules import rule_known
from tui.context.request import RequestView
from tui.context.untrusted.visible import visible

from tui.app.shown import cells


class CacheView(Static):
    DEFAULT_CSS = "CacheView { padding: 0 1; }"

    def show(self, view: RequestView, requests: list) -> None:
        prefix = view.prefix
        reuse = f"{prefix.rule} would reuse {prefix.predicted_cached}" if rule_known(prefix.rule) else \
            "the server's cache rule is not known: nothing is predicted, the reported figures are its own"
        head = Text(f"next request: {prefix.tokens} of {prefix.total_tokens} tokens unchanged; {reuse}\n",
                    style="bold")
        if prefix.source is not None:  # the server's cache modelled: which earlier prompt it will reuse, and where
            head.append(f"reused from {request_name(prefix.source)} ({visible(prefix.place)})\n")
        head.append(f"where it breaks: {visible(prefix.cause)}\n")
        table = Table(box=None, header_style="bold")
        for column in ("#", "sent", "predicted", "reported", "from", "cause"):
            table.add_column(column, justify="right" if column not in ("from", "cause") else "left")
        for record in requests[-50:]:
            reported = "—" if record.cached_reported is None else str(record.cached_reported)
            predicted = "—" if record.predicted_cached is None else str(record.predicted_cached)
            style = ""
            if record.cached_reported is not None and record.predicted_cached is not None \
                    and abs(record.cached_reported - record.predicted_cached) > 1:
                style = "yellow"
            source = "" if record.cache_source is None else \
                f"{'summary call' if is_summary_call(record.cache_source) else '#' + str(record.cache_source)} " \
                f"{record.cache_place}"
            said = provider_diagnosis((record.reply or {}).get("diagnostics"))
            table.add_row(*cells([record.number, record.document_tokens, predicted, reported, source,
                                  f"{record.cache_cause or ''} · {said}" if said else record.cache_cause]),
                          style=style)
        self.update(Group(head, table) if requests else Group(head, Text("no request sent yet", style="dim")))
