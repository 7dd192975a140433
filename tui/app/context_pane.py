"""The context pane: what the model is sent, in tabs (document, tokens, cache, ledger, cost, request, diff)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Static, TabbedContent, TabPane

from .cache_view import CacheView
from .cost_view import CostView
from .diff_view import DiffView
from .document_view import DocumentView
from .ledger_view import LedgerView
from .request_view import RequestView
from .tokens_view import TokensView

TABS = ("document", "tokens", "cache", "ledger", "cost", "request", "diff")


class ContextPane(Vertical):
    DEFAULT_CSS = """
    ContextPane { width: 1fr; border-left: solid $panel; }
    ContextPane #summary { height: auto; padding: 0 1; background: $panel; }
    ContextPane TabbedContent { height: 1fr; }
    ContextPane TabPane { padding: 0; }
    """

    def compose(self) -> ComposeResult:
        yield Static(id="summary")
        with TabbedContent(id="tabs"):
            with TabPane("Document", id="document"):
                yield DocumentView(id="document-view")
            with TabPane("Tokens", id="tokens"):
                yield VerticalScroll(TokensView(id="tokens-view"))
            with TabPane("Cache", id="cache"):
                yield VerticalScroll(CacheView(id="cache-view"))
            with TabPane("Ledger", id="ledger"):
                yield VerticalScroll(LedgerView(id="ledger-view"))
            with TabPane("Cost", id="cost"):
                yield VerticalScroll(CostView(id="cost-view"))
            with TabPane("Request", id="request"):
                yield RequestView(id="request-view")
            with TabPane("Diff", id="diff"):
                yield VerticalScroll(DiffView(id="diff-view"))

    def set_summary(self, text: Text) -> None:
        self.query_one("#summary", Static).update(text)

    @property
    def active(self) -> str:
        return self.query_one("#tabs", TabbedContent).active
