"""The context pane: what the model is sent, in tabs (document, tokens, cache, ledger, cost, request, diff)."""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.lazy import Lazy
from textual.widgets import Static, TabbedContent, TabPane

from tui.context.cache.prefix import RequestShape
from tui.context.request import RequestView
from tui.controller.snapshot import PaneState

from tui.app.pane.cache_tab import CacheView
from tui.app.pane.cost_tab import CostView
from tui.app.pane.diff_tab import DiffView
from tui.app.pane.document_tab import DocumentView, note_lines
from tui.app.pane.ledger_tab import LedgerView
from tui.app.pane.request_tab import RequestView as RequestTab
from tui.app.pane.header import TemplateStanding, summary_text
from tui.app.pane.tokens_tab import TokensView
from tui.app.messages import PaneUpdated

TABS = ("document", "tokens", "cache", "ledger", "cost", "request", "diff")
# A narrow pane (at 80 columns it has 39) gets shorter labels and tighter tabs, so every tab is on screen.
SHORT_LABELS = {"document": "Doc", "request": "Req"}
FULL_TABS_WIDTH = 56  # cells the tabs take with their full labels and default padding


@dataclass
class PaneData:
    """Everything besides the view that the tabs show; all of it computed elsewhere."""

    summary: Text
    messages: list = field(default_factory=list)  # session messages (with the draft), for notes and search
    draft_index: int | None = None
    previous: RequestShape | None = None
    window: int | None = None
    reserved: int = 0
    roles: dict = field(default_factory=dict)
    requests: list = field(default_factory=list)
    costs: list = field(default_factory=list)
    url: str = ""
    body: dict = field(default_factory=dict)
    key_env: str = "OPENAI_API_KEY"
    what_if: str = ""


class ContextPane(Vertical):
    DEFAULT_CSS = """
    ContextPane { width: 1fr; border-left: solid $panel; }
    ContextPane #summary { height: auto; padding: 0 1; background: $panel; }
    ContextPane TabbedContent { height: 1fr; }
    ContextPane TabPane { padding: 0; }
    ContextPane.-narrow Tab { padding: 0 0 0 1; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.view: RequestView | None = None
        self.data: PaneData | None = None
        self.roles: dict = {}
        self.generation = -1  # of the controller's state last shown: an older one never replaces it

    def compose(self) -> ComposeResult:
        yield Static(id="summary")
        with TabbedContent(id="tabs"):
            with TabPane("Document", id="document"):
                yield DocumentView(id="document-view")
            # The other tabs mount after the first frame (Lazy): start-up pays only for the document.
            with TabPane("Tokens", id="tokens"):
                yield Lazy(VerticalScroll(TokensView(id="tokens-view")))
            with TabPane("Cache", id="cache"):
                yield Lazy(VerticalScroll(CacheView(id="cache-view")))
            with TabPane("Ledger", id="ledger"):
                yield Lazy(VerticalScroll(LedgerView(id="ledger-view")))
            with TabPane("Cost", id="cost"):
                yield Lazy(VerticalScroll(CostView(id="cost-view")))
            with TabPane("Request", id="request"):
                yield Lazy(RequestTab(id="request-view"))
            with TabPane("Diff", id="diff"):
                yield Lazy(VerticalScroll(DiffView(id="diff-view")))

    def on_resize(self) -> None:
        narrow = self.size.width < FULL_TABS_WIDTH
        if narrow == self.has_class("-narrow"):
            return
        self.set_class(narrow, "-narrow")
        tabs = self.query_one("#tabs", TabbedContent)
        for tab_id, short in SHORT_LABELS.items():
            tab = tabs.get_tab(tab_id)
            tab.label = short if narrow else tab_id.capitalize()

    @property
    def active(self) -> str:
        return self.query_one("#tabs", TabbedContent).active

    def next_tab(self) -> None:
        tabs = self.query_one("#tabs", TabbedContent)
        tabs.active = TABS[(TABS.index(tabs.active) + 1) % len(TABS)]

    def set_roles(self, roles: dict) -> None:
        self.roles = roles
        self.query_one(DocumentView).set_roles(roles)

    def on_pane_updated(self, message: PaneUpdated) -> None:
        self.show_state(message.pane)

    def show_state(self, pane: PaneState) -> None:
        """Show the controller's picture of the request (the summary line is made here, from it)."""
        if pane.generation < self.generation:
            return
        self.generation = pane.generation
        standing = TemplateStanding.WHAT_IF if pane.what_if else \
            TemplateStanding.ASSUMED if pane.assumed else TemplateStanding.ITS_OWN
        summary = summary_text(pane.view, pane.policy, pane.previous, pane.read_only, standing=standing, fit=pane.fit)
        self.show(pane.view, PaneData(summary, pane.messages, pane.draft_index, pane.previous,
                                      pane.policy.context_window, pane.policy.max_tokens, self.roles,
                                      pane.requests, list(pane.costs), pane.url, pane.body, pane.key_env,
                                      pane.what_if))

    def show(self, view: RequestView, data: PaneData) -> None:
        self.view, self.data = view, data
        notes = note_lines(view, data.messages, data.draft_index, data.previous is not None)
        self.query_one(DocumentView).show(view, notes, data.draft_index)
        self.query_one("#summary", Static).update(data.summary)
        self.show_tab(self.active)

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        event.stop()
        self.show_tab(event.pane.id or "")

    def show_tab(self, tab: str) -> None:
        view, data = self.view, self.data
        if view is None or data is None or (tab != "document" and not self.query(f"#{tab}-view")):
            return  # a lazy tab not mounted yet: it is filled when activated
        if tab == "tokens":
            self.query_one(TokensView).show(view, data.window, data.reserved, data.roles, reconciled(data.requests))
        elif tab == "cache":
            self.query_one(CacheView).show(view, data.requests)
        elif tab == "ledger":
            self.query_one(LedgerView).show(view, [m.text() for m in data.messages], data.requests, data.messages)
        elif tab == "cost":
            self.query_one(CostView).show(data.costs, (view.sent_tokens, view.keep_all_tokens), data.roles,
                                          data.requests)
        elif tab == "request":
            self.query_one(RequestTab).show(data.url, data.body, data.key_env, data.what_if)
        elif tab == "diff":
            self.query_one(DiffView).show(data.previous, view.shape)


def reconciled(requests: list) -> str:
    """The newest request's images reconciled with the server's count, as one line ("" when none was)."""
    for record in reversed(requests):
        received = getattr(record, "received", None) or {}
        if received.get("images_reconciled") is not None:
            estimate, found = received.get("images_estimate", 0), received["images_reconciled"]
            return (f"request {record.number}: images {estimate} tokens estimated, {found} by the server's count "
                    f"(reconciled: {found - estimate:+d})")
        if received:
            return ""
    return ""
