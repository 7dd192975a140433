"""A finished reply drawn as Markdown (headings, emphasis, lists, tables, highlighted code) for the chat view.

The model's Markdown is untrusted. It is made visible (`visible()`: stand-ins for control, BiDi and hidden
characters) before it is parsed, and what Rich renders is kept only as text and colours: links and Rich's
meta (which could carry `@click` actions) are removed, and control segments dropped. Each rendered line
becomes one chat block whose spans carry Rich styles; the view wraps and draws them like any other text.
A reply longer than MARKDOWN_LIMIT stays plain text (its rendering would cost too much at once).

A short reply can still expand (one long address behind many reference links is repeated at each), so every
rendering has a Budget: the text the parsed document would produce, the characters laid out and a deadline.
A rendering past its budget, or one that fails, is plain text instead (`markdown_or_plain`); on the loop a
small budget applies, and what does not fit it is handed to the worker.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Iterator

from rich.console import Console
from rich.segment import Segment
from rich.style import Style

from tui.context.untrusted.visible import visible

from tui.app.chat.wrap import Block

if TYPE_CHECKING:
    from markdown_it.token import Token

MARKDOWN_LIMIT = 50_000  # characters: longer replies are shown as plain wrapped text
CODE_THEME = "monokai"


@dataclass(frozen=True)
class Budget:
    """What one rendering may cost: characters of text the document expands to, characters laid out, time."""

    expanded: int
    laid_out: int
    seconds: float

    def deadline(self) -> float:
        return time.perf_counter() + self.seconds


# Off the loop the sizes are the bound; the deadline only stops a runaway (a loaded machine renders a real
# 50,000-character reply in several seconds: a tight deadline would show it plain there and as Markdown here).
WORKER_BUDGET = Budget(expanded=2 * MARKDOWN_LIMIT, laid_out=2_000_000, seconds=20.0)
LOOP_BUDGET = Budget(expanded=8_000, laid_out=100_000, seconds=0.1)


class OverBudget(Exception):
    """A rendering that would cost more than its Budget: the reply is shown another way."""


def wants_markdown(message) -> bool:
    """A model's reply with text, not too long to render at once."""
    if message.role != "assistant" or message.provenance.source != "model":
        return False
    text = message.text()
    return bool(text.strip()) and len(text) <= MARKDOWN_LIMIT


_local = threading.local()  # one console a thread: replies are rendered on the loop and in a worker


def _console() -> Console:
    # Never writes anywhere: only lays out lines. Truecolor so code highlighting keeps its colours.
    console = getattr(_local, "console", None)
    if console is None:
        console = _local.console = Console(width=80, color_system="truecolor", force_terminal=False,
                                           legacy_windows=False, file=_Nowhere(), emoji=False, markup=False,
                                           highlight=False)
    return console


class _Nowhere:
    def write(self, _text: str) -> int:
        return 0

    def flush(self) -> None:
        pass


def _clean(style: Style | None) -> Style | None:
    """Colours and attributes only: no link (OSC 8), no meta (Textual reads `@click` from it)."""
    if style is None:
        return None
    return style.clear_meta_and_links() if (style.link or style._meta) else style


def _line_block(segments: list[Segment]) -> Block:
    parts = [(segment.text, _clean(segment.style)) for segment in segments if not segment.control]
    while parts and not (parts[-1][1] and parts[-1][1].bgcolor):
        piece, style = parts[-1]  # trailing padding without a background: not drawn, not copied
        if piece.rstrip():
            parts[-1] = (piece.rstrip(), style)
            break
        parts.pop()
    text, spans = "", []
    for piece, style in parts:
        if style is not None and style != Style():
            spans.append((len(text), len(text) + len(piece), style))
        text += piece
    return Block(text, "markdown", tuple(spans))


def expanded_size(tokens: Iterable[Token]) -> int:
    """Characters the parsed document can put on screen (an upper bound): each token's text, and each link's
    address, which is shown beside its text (a reference link repeats its definition's address)."""
    size = 0
    for token in tokens:
        size += len(token.content) + len(str(token.attrs.get("href") or "")) + len(str(token.attrs.get("src") or ""))
        if token.children:
            size += expanded_size(token.children)
    return size


MAX_TABLE_COLUMNS = 64  # Rich lays a table out column by column: thousands of them take minutes, and show nothing


def widest_row(tokens: Iterable[Token]) -> int:
    """The most cells in one table row of the parsed document."""
    widest = cells = 0
    for token in tokens:
        if token.type == "tr_open":
            cells = 0
        elif token.type in ("th_open", "td_open"):
            cells += 1
            widest = max(widest, cells)
    return widest


def _within(segments: Iterable[Segment], budget: Budget, deadline: float) -> Iterator[Segment]:
    laid_out = 0
    for segment in segments:
        laid_out += len(segment.text)
        if laid_out > budget.laid_out or time.perf_counter() > deadline:
            raise OverBudget(f"over {budget.laid_out} characters or {budget.seconds} s to lay out")
        yield segment


def load_markdown() -> None:
    """Import the Markdown parser and Rich's Markdown (a thread calls this after the first frame, so the first reply
    does not wait for them on the loop)."""
    import markdown_it  # noqa: F401
    import rich.markdown  # noqa: F401


def markdown_blocks(text: str, width: int, budget: Budget = WORKER_BUDGET) -> list[Block]:
    """The reply rendered as Markdown at `width` cells, one block a line; OverBudget past `budget`."""
    from markdown_it import MarkdownIt  # the parser and Rich's Markdown load with the first reply, not at start
    from rich.markdown import Markdown

    deadline = budget.deadline()
    console = _console()
    source = visible(text)
    document = Markdown("", code_theme=CODE_THEME, hyperlinks=False, inline_code_lexer=None)
    # HTML is shown as the text it is (Rich would drop a block or comment: text the user could not see)
    document.markup = source
    document.parsed = MarkdownIt("commonmark", {"html": False}).enable("strikethrough").enable("table").parse(source)
    if expanded_size(document.parsed) > budget.expanded:
        raise OverBudget(f"it expands past {budget.expanded} characters")
    if widest_row(document.parsed) > MAX_TABLE_COLUMNS:
        raise OverBudget(f"a table has more than {MAX_TABLE_COLUMNS} columns")
    options = console.options.update(width=max(10, width), height=None)
    segments = _within(console.render(document, options), budget, deadline)
    lines = list(Segment.split_and_crop_lines(segments, options.max_width, include_new_lines=False, pad=False))
    while lines and not "".join(segment.text for segment in lines[-1]).strip():
        lines.pop()
    return [_line_block(line) for line in lines] or [Block("", "markdown")]


class MarkdownRenders:
    """Rendered replies by (text, width). What is missing is asked for (`wanted`) and rendered elsewhere
    (a worker thread), except small replies, rendered at once while a frame's budget lasts (`begin`)."""

    SMALL = 4_000  # characters
    BUDGET = 0.015  # seconds of rendering on the loop per layout

    def __init__(self) -> None:
        self.done: dict[tuple[str, int], list[Block]] = {}  # kept by the layout for the replies it shows
        self.wanted: dict[tuple[str, int], None] = {}  # in the order asked
        self._deadline = 0.0

    def begin(self) -> None:
        self._deadline = time.perf_counter() + self.BUDGET

    def get(self, text: str, width: int) -> list[Block] | None:
        key = (text, width)
        blocks = self.done.get(key)
        if blocks is None and len(text) <= self.SMALL and time.perf_counter() < self._deadline:
            blocks = _on_the_loop(text, width)
            if blocks is not None:
                self.done[key] = blocks
        if blocks is None:
            self.wanted[key] = None
        return blocks

    def take_wanted(self) -> list[tuple[str, int]]:
        keys, self.wanted = list(self.wanted), {}
        return keys

    def add(self, key: tuple[str, int], blocks: list[Block]) -> None:
        self.done[key] = blocks


def _on_the_loop(text: str, width: int) -> list[Block] | None:
    """A small reply rendered within the loop's budget; None when it needs more (the worker is asked)."""
    try:
        return markdown_blocks(text, width, LOOP_BUDGET)
    except OverBudget:
        return None
    except Exception:  # noqa: BLE001 - a reply Rich cannot render is shown as it came (asked once, not again)
        return [Block(text, "body")]


def markdown_or_plain(text: str, width: int) -> list[Block]:
    """The reply as Markdown within the worker's budget, else as the plain text it came as."""
    try:
        return markdown_blocks(text, width)
    except Exception:  # noqa: BLE001 - over budget, or a reply Rich cannot render: shown as it came, once
        return [Block(text, "body")]


class RendersMarkdown:
    """The chat view's Markdown work, off the loop: a reply shows as plain text until its rendering is ready."""

    _markdown_busy = False  # a worker is rendering replies as Markdown

    def _ask_markdown(self) -> None:
        markdown = self.layout_model.markdown
        if markdown.wanted and not self._markdown_busy:
            self._markdown_busy = True
            keys = markdown.take_wanted()  # the replies near the view (wrapped when they came near it)
            self.run_worker(lambda: self._render_markdown(keys), thread=True, group="markdown", exit_on_error=False)

    def _render_markdown(self, keys: list[tuple[str, int]]) -> None:
        """In a worker thread: render, handing results to the loop in batches (a relayout each, not each reply)."""
        batch, started = [], time.monotonic()
        try:
            for key in keys:
                if key[1] != self.layout_model.width:
                    break  # the view has another width now: the next layout asks again
                batch.append((key, markdown_or_plain(*key)))
                if time.monotonic() - started > 0.25:  # a relayout of a long session costs ms: not too often
                    self.app.call_from_thread(self._markdown_ready, batch, False)
                    batch, started = [], time.monotonic()
        finally:
            self.app.call_from_thread(self._markdown_ready, batch, True)

    def _markdown_ready(self, batch: list, last: bool) -> None:
        for key, blocks in batch:
            self.layout_model.markdown.add(key, blocks)
        if last:
            self._markdown_busy = False
        if batch or last:
            self.show(self._messages, self._dropped, self._notes)
