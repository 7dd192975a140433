"""A fast stream from the real llama.cpp server: how far behind the last chunk is the screen?

    .venv/bin/python -m tests.benchmarks.bench_stream [TOKENS]

Runs the app headless against ../shared's server (about 600 tokens/s), times each chunk's
arrival and each repaint of the streaming reply, and reports how long after a chunk arrived the
reply on screen first included it, plus the lag from the last chunk to the final repaint.
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tui.app import app as app_module
from tui.app.message_item import MessageItem
from tui.client.reply import ReplyAssembler

SHARED = Path(__file__).resolve().parents[3] / "shared"
arrivals: list[tuple[float, int]] = []
paints: list[tuple[float, int]] = []


def instrument() -> None:
    apply, set_reply = ReplyAssembler.apply, MessageItem.set_reply

    def timed_apply(self, chunk):
        added = apply(self, chunk)
        if added:
            arrivals.append((time.perf_counter(), len(self.reply.content)))
        return added

    def timed_set_reply(self, content, reasoning, calls, note=""):
        set_reply(self, content, reasoning, calls, note)
        paints.append((time.perf_counter(), len(content)))

    ReplyAssembler.apply, MessageItem.set_reply = timed_apply, timed_set_reply


async def run(url: str, tokens: int) -> float:
    app = app_module.CtxpaneApp(app_module.LaunchOptions(flags={"base_url": url, "no_scan": True}))
    async with app.run_test(size=(160, 48)) as pilot:
        for _ in range(100):
            await pilot.pause(0.1)
            if app.client is not None:
                break
        app.wb.session.params = {"temperature": 0, "ignore_eos": True}
        app.wb.set_policy(max_tokens=tokens)
        await pilot.press(*"Tell me everything", "enter")
        while not app.controller.streaming:
            await pilot.pause(0.01)
        while app.controller.streaming:
            await pilot.pause(0.01)
        done = time.perf_counter()
        await pilot.pause(0.2)
        return done


def main() -> None:
    tokens = int(sys.argv[1]) if len(sys.argv) > 1 else 1500
    port = 18931
    script = SHARED / "server" / "start-llama-server.sh"
    url = subprocess.run(["bash", str(script), str(port)], capture_output=True, text=True, check=True).stdout.strip()
    try:
        instrument()
        import os
        os.environ["XDG_DATA_HOME"] = tempfile.mkdtemp()
        finished = asyncio.run(run(url, tokens))
    finally:
        subprocess.run(["bash", str(script), "stop", str(port)], capture_output=True)
    lags = []
    for arrived, length in arrivals:
        shown = next((t for t, n in paints if n >= length and t >= arrived), finished)
        lags.append((shown - arrived) * 1000)
    ordered = sorted(lags)
    span = arrivals[-1][0] - arrivals[0][0]
    print(f"{len(arrivals)} chunks in {span:.2f} s ({len(arrivals) / span:.0f} chunks/s), {len(paints)} repaints")
    print(f"chunk -> on screen: median {statistics.median(ordered):.1f} ms, p95 {ordered[int(len(ordered) * .95) - 1]:.1f}"
          f" ms, max {ordered[-1]:.1f} ms; last chunk -> reply final on screen {(finished - arrivals[-1][0]) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
