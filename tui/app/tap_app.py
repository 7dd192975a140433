"""`ctxpane tap` in the app: the requests another program sends, listed live, each shown in the context pane.

The proxy runs on the app's event loop (aiohttp: it only forwards bytes); the recorder renders and counts
on its own thread and tells the app through `call_soon_threadsafe`. Everything shown of a request (the
client's name, the model, the messages) came from outside: it reaches the screen through shown.py.
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.widgets import Footer, Header, OptionList, Static
from textual.widgets.option_list import Option

from tui.context.cache.rules import shown_figure
from tui.context.policy.truncation import PolicySettings
from tui.sessions.receipts import request_series
from tui.context.formats import FormatKind
from tui.sessions.replay import record_wire
from tui.tap.client_cuts import messages_of
from tui.tap.bodies import max_tokens_of, shown_body

from tui.app.clipboard import SafeClipboard
from tui.app.pane.pane import ContextPane, PaneData
from tui.app.shown import one_line, shown, shown_line
from tui.app.pane.header import summary_text
from tui.app.themes import DEFAULT_ROLES

LIVE_EVERY = 0.25  # seconds between two redraws of a streaming reply's line
MAX_LISTED = 2000  # requests listed (the oldest leave the list; their session files stay)


def request_label(tapped) -> Text:
    ex, record = tapped.exchange, tapped.record
    if record is None:
        status = ex.status if ex.status is not None else "…"
        return shown_line(f"#{ex.number} {ex.method} {one_line(ex.path, 60)} -> {status} · "
                          f"{tapped.problem or 'passed through'}", "dim")
    cached = record.cached_reported if record.cached_reported is not None else "?"
    state = f"{ex.duration:.2f}s" if ex.duration is not None else f"streaming… {ex.forwarded_bytes} bytes"
    cut = f" · client cut {len(record.dropped)}" if record.dropped else ""
    error = " · ✗ " + one_line(ex.error, 60) if ex.error else ""
    style = "bold red" if ex.error or (ex.status or 200) >= 400 else "bold yellow" if record.dropped else ""
    client = ex.client.rsplit(" ", 1)[0] if " " in ex.client else ex.client  # the address is in the detail
    return shown_line(f"#{ex.number} c{tapped.conversation}.{tapped.index + 1} {one_line(client, 24)} · "
                      f"{one_line(tapped.model, 24)} · {record.document_tokens} tok · cached {cached} "
                      f"(pred. {shown_figure(record.predicted_cached)}) · {state}{cut}{error}", style)


class TapApp(SafeClipboard):
    TITLE = "ctxpane tap"
    BINDINGS = [
        Binding("q,ctrl+q", "quit", "Quit", priority=True),
        Binding("t", "next_tab", "Next tab"),
        Binding("f", "follow", "Follow newest"),
    ]
    DEFAULT_CSS = """
    TapApp #tap-left { width: 1fr; }
    TapApp #tap-info { height: auto; padding: 0 1; background: $panel; }
    TapApp #tap-list { height: 1fr; }
    TapApp #tap-detail { height: auto; max-height: 12; padding: 0 1; }
    """

    def __init__(self, upstream: str, folder: Path, host: str = "127.0.0.1", port: int = 8089,
                 max_body: int = 32 * 1024 * 1024) -> None:
        super().__init__()
        self.upstream, self.folder, self.host, self.port, self.max_body = upstream, folder, host, port, max_body
        self.tap = None
        self.order: list[int] = []  # exchange numbers, as listed
        self.follow = True
        self.selected: int | None = None
        self._live_at = 0.0  # when a streaming reply's line was last redrawn
        self._moved: set[str] = set()  # options highlighted by following, not by the user
        self._closing = False
        self.failure = ""  # why it could not start, said once the terminal is back
        self.conversations = 0  # recorded, said once the terminal is back
        self.saved = ""  # what the files hold, said once the terminal is back
        self._loop: asyncio.AbstractEventLoop | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal():
            with Vertical(id="tap-left"):
                yield Static(id="tap-info")
                yield OptionList(id="tap-list")
                yield Static(id="tap-detail")
            yield ContextPane(id="tap-pane")
        yield Footer()

    async def on_mount(self) -> None:
        from tui.tap.runner import Tap

        self._loop = asyncio.get_running_loop()
        logging.getLogger("ctxpane.tap").propagate = False  # failures are shown in the list, not on the terminal
        logging.getLogger("ctxpane.tap").addHandler(logging.NullHandler())
        self.query_one(ContextPane).set_roles(dict(DEFAULT_ROLES))
        self.tap = Tap(self.upstream, self.folder, self.host, self.port, self.max_body, self.told)
        try:
            url = await self.tap.start()
        except OSError as exc:
            self.failure = f"cannot listen on {self.host}:{self.port}: {exc.strerror or exc}"
            self.tap = None
            self.exit(return_code=2)
            return
        self.url = url
        self.tap.server.listeners.append(self.traffic)  # called on this loop, as bytes go through
        self.show_info()
        self.query_one("#tap-detail", Static).update(shown(
            f"waiting for requests: point a program at it, e.g. OPENAI_BASE_URL={url} python my_agent.py", "dim"))

    def show_info(self) -> None:
        if self.tap is None:
            return
        recorder = self.tap.recorder
        engine = recorder.engine
        text = Text()
        text.append(one_line(f"tap {self.url} -> {self.tap.server.upstream}"), style="bold")
        text.append(one_line(f" · {len(recorder.threads)} conversations · {len(recorder.tapped)} requests"
                             f" · {self.tap.server.active} open"))
        text.append("\n" + one_line(f"sessions in {self.folder}"), style="dim")
        if engine is not None:
            text.append("\n" + one_line(engine.note, 200), style="dim")
        if recorder.failures:
            text.append("\n" + one_line(f"⚠ {recorder.failures} requests could not be recorded (the traffic "
                                        "went through)"), style="bold red")
        self.query_one("#tap-info", Static).update(text)

    async def on_unmount(self) -> None:
        self._closing = True
        if self.tap is not None:
            await self.tap.server.close()
            await asyncio.to_thread(self.tap.recorder.close, True)  # what is still due is saved before exit
            self.conversations = len(self.tap.recorder.threads)
            self.saved = self.tap.recorder.saved_line()

    def traffic(self, kind: str, exchange) -> None:
        """A reply's bytes going through (on the event loop): its line and detail follow, a few times a second."""
        if kind != "chunk" or self.tap is None:
            return
        now = time.monotonic()
        if now - self._live_at < LIVE_EVERY:
            return
        self._live_at = now
        tapped = self.tap.recorder.tapped.get(exchange.number)
        if tapped is not None and exchange.number in self.order and not self._closing:
            self.query_one("#tap-list", OptionList).replace_option_prompt(f"r{exchange.number}",
                                                                          request_label(tapped))
            if exchange.number == self.selected:
                self.query_one("#tap-detail", Static).update(self.detail(tapped))

    # -- told by the recorder, on its thread -------------------------------------------------------
    def told(self, kind: str, tapped) -> None:
        loop = self._loop
        try:
            if loop is not None and not loop.is_closed():
                loop.call_soon_threadsafe(self.arrived, kind, tapped)
        except RuntimeError:  # the app's loop closed meanwhile: the recording goes on to its file
            pass

    def arrived(self, kind: str, tapped) -> None:
        if not self.is_running:
            return
        try:
            listing = self.query_one("#tap-list", OptionList)
        except NoMatches:  # the screen is going away
            return
        number = tapped.exchange.number
        option_id = f"r{number}"
        if number in self.order:
            listing.replace_option_prompt(option_id, request_label(tapped))
        else:
            self.order.append(number)
            listing.add_option(Option(request_label(tapped), id=option_id))
            if len(self.order) > MAX_LISTED:
                listing.remove_option(f"r{self.order.pop(0)}")
            if self.follow:
                self._moved.add(option_id)  # its highlight event is ours, not the user's
                listing.highlighted = listing.option_count - 1
        if number == self.selected or (self.follow and number == self.order[-1]):
            self.show_request(number)
        self.show_info()

    # -- the user --------------------------------------------------------------------------------
    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        option_id = event.option.id or "r0"
        if option_id in self._moved:  # the list followed a new request: the newest is shown already
            self._moved.discard(option_id)
            return
        number = int(option_id[1:])
        self.follow = number == (self.order[-1] if self.order else None)  # the user moved: follow only at the end
        self.show_request(number)

    def action_next_tab(self) -> None:
        self.query_one(ContextPane).next_tab()

    def action_follow(self) -> None:
        self.follow = True
        if self.order:
            self.query_one("#tap-list", OptionList).highlighted = len(self.order) - 1
            self.show_request(self.order[-1])

    def show_request(self, number: int) -> None:
        if self.tap is None:
            return
        recorder = self.tap.recorder
        tapped = recorder.tapped.get(number)
        if tapped is None:
            return
        self.selected = number
        self.query_one("#tap-detail", Static).update(self.detail(tapped))
        if tapped.view is None or tapped.record is None:
            return
        thread = recorder.threads.get(tapped.conversation)
        requests = list(thread.session.requests[:tapped.index + 1]) if thread else [tapped.record]
        record = tapped.record
        policy = PolicySettings("keep-all")
        engine = recorder.engine
        window = engine.info.n_ctx if engine is not None and engine.info is not None else None
        previous = tapped.previous.shape if tapped.previous is not None else None
        summary = summary_text(tapped.view, policy, previous,
                               prefix=f"conversation {tapped.conversation} · request {tapped.index + 1}: ")
        costs = request_series(requests)
        session = thread.session if thread else None
        wire = record_wire(session, record)[0] if session is not None else record.body.get("messages", [])
        messages = messages_of(wire, record.message_ids if len(record.message_ids) == len(wire)
                               else [f"w{i}" for i in range(len(wire))])
        data = PaneData(summary, messages, None, previous, window, max_tokens_of(record),
                        self.query_one(ContextPane).roles, requests, costs,
                        self.tap.server.upstream + FormatKind(record.format).path, shown_body(record.body),
                        sent=record.sent, sent_base=self.tap.server.upstream)
        self.query_one(ContextPane).show(tapped.view, data)

    @staticmethod
    def detail(tapped) -> Text:
        ex, record = tapped.exchange, tapped.record
        text = Text()
        text.append(one_line(f"#{ex.number} {ex.method} {ex.path} -> {ex.status or '…'} · client {ex.client}", 300),
                    style="bold")
        if ex.first_byte is not None:
            text.append("\n")
            text.append(one_line(f"first byte {ex.first_byte * 1000:.0f} ms · {len(ex.chunks)} chunks · "
                                 f"{ex.forwarded_bytes} bytes"
                                 + (f" · {ex.duration:.2f} s" if ex.duration is not None else " · streaming…")))
        if record is not None:
            text.append("\n")
            predicted = shown_figure(record.predicted_cached)
            text.append(one_line(f"cache: predicted {predicted} before the answer · reported "
                                 f"{shown_figure(record.cached_reported)} · "
                                 f"{record.cache_cause}", 300))
            for entry in record.dropped:
                text.append("\n" + one_line(f"✂ the client cut {entry['message_id']} ({entry['role']}, "
                                            f"{entry['tokens']} tokens): {entry['reason']}", 300), style="yellow")
        if ex.error:
            text.append("\n" + one_line(f"✗ {ex.error}", 300), style="bold red")
        if tapped.problem:
            text.append("\n" + one_line(tapped.problem, 300), style="yellow")
        return text
