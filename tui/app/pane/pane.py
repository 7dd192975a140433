"""The context pane: what the model is sent, in tabs (document, tokens, cache, ledger, cost, request, diff)."""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import import_module
from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.lazy import Lazy
from textual.widget import Widget
from textual.widgets import Static, TabbedContent, TabPane


from tui.app.pane.document_tab import DocumentView, note_lines
from tui.app.pane.header import TemplateStanding, summary_text
from tui.app.messages import PaneUpdated

if TYPE_CHECKING:
    from tui.context.cache.prefix import RequestShape
    from tui.context.request import RequestView
    from tui.controller.snapshot import PaneState

TABS = ("document", "tokens", "cache", "ledger", "cost", "request", "diff", "review")
# A narrow pane (at 80 columns it has 39) gets shorter labels and tighter tabs, so every tab is on screen.
SHORT_LABELS = {"document": "Doc", "tokens": "Tok", "request": "Req", "review": "Rev"}
FULL_TABS_WIDTH = 64  # cells the tabs take with their full labels and default padding


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
    reviews: tuple = ()  # the isolated reviewer's requests and verdicts (tui/controller/tool_calls.py)
    sent: dict | None = None  # how a tapped request was sent (its path, query, headers): its curl sends them again
    sent_base: str = ""  # the upstream the tap sent it to


# The tabs after the first: their module, view class, and whether the view scrolls in a VerticalScroll. Their
# modules load the engine, so they are imported when Lazy mounts them, after the first frame (issue 23).
LATER_VIEWS = {"tokens": ("tokens_tab", "TokensView", True), "cache": ("cache_tab", "CacheView", True),
               "ledger": ("ledger_tab", "LedgerView", True), "cost": ("cost_tab", "CostTab", True),
               "request": ("request_tab", "RequestView", False), "diff": ("diff_tab", "DiffView", True),
               "review": ("review_tab", "ReviewView", True)}


class LaterView(Vertical):
    """A tab's view, its module imported when this is mounted (under Lazy: after the first frame)."""

    def __init__(self, tab: str) -> None:
        super().__init__()
        self.tab = tab

    def compose(self) -> ComposeResult:
        module, name, scrolls = LATER_VIEWS[self.tab]
        view: Widget = getattr(import_module(f"tui.app.pane.{module}"), name)(id=f"{self.tab}-view")
        yield VerticalScroll(view) if scrolls else view


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
        yield Static("loading…", id="summary")  # until the engine, loaded after the first frame, has a view
        with TabbedContent(id="tabs"):
            with TabPane("Document", id="document"):
                yield DocumentView(id="document-view")
            # The other tabs mount after the first frame (Lazy): start-up pays only for the document.
            for tab in LATER_VIEWS:
                with TabPane(tab.capitalize(), id=tab):
                    yield Lazy(LaterView(tab))

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
                                      pane.what_if, pane.reviews))

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
        shown = self.query_one(f"#{tab}-view")
        if tab == "tokens":
            shown.show(view, data.window, data.reserved, data.roles, reconciled(data.requests))
        elif tab == "cache":
            shown.show(view, data.requests)
        elif tab == "ledger":
            shown.show(view, [m.text() for m in data.messages], data.requests, data.messages)
        elif tab == "cost":
            shown.show(data.costs, (view.sent_tokens, view.keep_all_tokens), data.roles, data.requests)
        elif tab == "request":
            shown.show(data.url, data.body, data.key_env, data.what_if, data.sent, data.sent_base)
        elif tab == "diff":
            shown.show(data.previous, view.shape)
        elif tab == "review":
            shown.show(data.reviews)

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
