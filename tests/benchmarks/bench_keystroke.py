"""Keystroke to pane updated, at 10k / 100k / 500k tokens, against a naive full re-render and re-count.

    .venv/bin/python -m tests.benchmarks.bench_keystroke

"Pane updated" here means: the engine's new view, the document laid out again, and every visible
row of the document drawn (Line API strips). The naive path renders the whole conversation again,
counts it with no cache, and lays the document out from scratch. A third figure times a real
keypress through Textual's pilot up to the next idle frame.
"""

from __future__ import annotations

import asyncio
import gc
import os
import statistics
import sys
import tempfile
import time

from tests.benchmarks.corpus import conversation
from tui.app.app import CtxpaneApp, LaunchOptions
from tui.app.pane.document_tab import DocumentView
from tui.context import builtin_template, get_tokenizer
from tui.context.messages import message_from_dict
from tui.context.request import build_request
from tui.context.tokens.counting import SegmentCache
from tui.sessions.model import Session
from tests.waiting import eventually


def stats(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[max(0, int(len(ordered) * 0.95) - 1)]


def draw_visible(view: DocumentView) -> None:
    for y in range(view.size.height):
        view.render_line(y)


async def measure(tokens: int, keystrokes: int = 60) -> dict:
    session = Session(messages=[message_from_dict(m, i) for i, m in enumerate(conversation(tokens))])
    session.messages.pop()  # the draft is typed below
    app = CtxpaneApp(LaunchOptions(flags={"no_scan": True}, offline=True))
    async with app.run_test(size=(160, 48)) as pilot:
        # the app opens its own (sample) session after the first frame, and computes it
        await eventually(lambda: app.wb.session.messages and app.wb.view is not None, 30, "the sample session",
                         pilot=pilot)
        await app.workers.wait_for_complete()
        app.controller.adopt(session, None)
        app.wb.set_tokenizer(get_tokenizer("o200k_base"))
        app.wb.set_template(builtin_template("chatml"))
        app.wb.draft = "And now"
        app.refresh_all()
        await eventually(lambda: app.wb.view is not None and "And now" in app.wb.view.document.text, 30,
                         "the adopted session's view, with its draft", pilot=pilot)
        gc.collect()
        gc.freeze()  # as the app does after start-up in production use, long-lived objects leave the GC's way
        document_view = app.query_one(DocumentView)
        fast, naive = [], []
        text = app.wb.draft
        for i in range(keystrokes):
            text += "x" if i % 7 else " "
            start = time.perf_counter()
            if not app.wb.set_draft(text):
                app.wb.rebuild()
            app.refresh_pane()
            draw_visible(document_view)
            fast.append((time.perf_counter() - start) * 1000)
        for _ in range(max(5, keystrokes // 6)):
            text += "y"
            start = time.perf_counter()
            app.wb.draft = text
            view = build_request(app.wb.messages_with_draft(), app.wb.settings(), cache=SegmentCache())
            document_view.layout_model = type(document_view.layout_model)()
            app.wb.view = view
            app.refresh_pane()
            draw_visible(document_view)
            naive.append((time.perf_counter() - start) * 1000)
        app.wb.set_draft(text)
        app.wb.rebuild()
        app.refresh_pane()
        pressed = []
        for key in "abcdefghij" * 2:
            start = time.perf_counter()
            await pilot.press(key)
            await pilot.pause()
            pressed.append((time.perf_counter() - start) * 1000)
        gc.unfreeze()
        return {"tokens": app.wb.view.sent_tokens, "chars": len(app.wb.view.document.text),
                "fast": stats(fast), "naive": stats(naive), "pilot": stats(pressed)}


def main() -> None:
    os.environ.setdefault("XDG_DATA_HOME", tempfile.mkdtemp(prefix="ctxpane-bench-"))
    sizes = [int(a) for a in sys.argv[1:]] or [10_000, 100_000, 500_000]
    print("keystroke -> pane updated (engine + layout + visible rows), ms")
    for size in sizes:
        result = asyncio.run(measure(size))
        fast, naive, pilot = result["fast"], result["naive"], result["pilot"]
        print(f"{result['tokens']:>8,} tokens ({result['chars']:,} chars): "
              f"incremental median {fast[0]:.2f} p95 {fast[1]:.2f} | naive median {naive[0]:.1f} p95 {naive[1]:.1f}"
              f" | ratio {naive[0] / fast[0]:.0f}x | real keypress to idle frame median {pilot[0]:.1f} p95 {pilot[1]:.1f}")


if __name__ == "__main__":
    main()
