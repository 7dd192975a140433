"""A long fast stream from the real llama.cpp server: how far behind the last chunk is the screen?

    .venv/bin/python -m tests.benchmarks.bench_stream [TOKENS] [--port PORT]
    .venv/bin/python -m tests.benchmarks.bench_stream --fake [--chunks 2000] [--rate 100]

Runs the app headless against ../shared's server (the tiny model, ~300-600 tokens/s, one chunk a
token; started here with a context big enough for TOKENS), asks for TOKENS tokens (temperature 0,
ignore_eos) and records: each chunk's arrival (ReplyAssembler.apply), each time the chat view took
the reply's new text (ChatView.reply_grew), and each frame the app produced (App._display, called
once the frame's rows are drawn). A chunk is "on screen" at the first frame after the chat view took
a reply that contains it. Reported: chunk -> on screen p50/p95/max over the whole reply and over its
first and last tenth (the goal: p95 <= 50 ms, and the end no slower than the start).

--fake serves the reply from a real HTTP server on 127.0.0.1 in this process instead (SSE over chunked
HTTP, as tests/fault_server.py does): CHUNKS chunks of 10 words (~10 tokens each) at RATE chunks a second,
for when the shared server is too slow on a loaded machine to give 20k tokens in reasonable time.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import os
import random
import statistics
import sys
import subprocess
import tempfile
import time
from pathlib import Path

from textual.app import App

from tui.app import app as app_module
from tui.app.chat.transcript import ChatView
from tui.client.reply import ReplyAssembler
from tests.waiting import eventually

SHARED = Path(__file__).resolve().parents[3] / "shared"
arrivals: list[tuple[float, int]] = []  # (time, reply length after this chunk)
taken: list[tuple[float, int]] = []  # (time, reply length the chat view took)
frames: list[float] = []


def instrument() -> None:
    apply, reply_grew, display = ReplyAssembler.apply, ChatView.reply_grew, App._display

    def timed_apply(self, chunk):
        added = apply(self, chunk)
        if added:
            arrivals.append((time.perf_counter(), len(self.reply.content)))
        return added

    def timed_reply_grew(self, grew):  # the delta path: the chat view takes what is new
        reply_grew(self, grew)
        taken.append((time.perf_counter(), len(grew.content)))

    def timed_display(self, screen, renderable):
        if renderable is not None:
            frames.append(time.perf_counter())
        return display(self, screen, renderable)

    ReplyAssembler.apply, ChatView.reply_grew, App._display = timed_apply, timed_reply_grew, timed_display


async def run(url: str, tokens: int) -> float:
    app = app_module.CtxpaneApp(app_module.LaunchOptions(flags={"base_url": url, "no_scan": True}))
    async with app.run_test(size=(160, 48)) as pilot:
        await eventually(lambda: app.client is not None, 60, "the app to connect", pilot=pilot, poll=0.1)
        app.wb.session.params = {"temperature": 0, "ignore_eos": True}
        app.wb.set_policy(max_tokens=tokens)
        before = len(app.wb.session.messages)
        await pilot.press(*"Tell me everything", "enter")
        await eventually(lambda: not app.controller.streaming and len(app.wb.session.messages) >= before + 2, 3600,
                         "the question and the whole reply in the session", pilot=pilot, poll=0.05)
        done = time.perf_counter()
        await eventually(lambda: frames and taken and frames[-1] >= last_growth(), 10,  # the end drawn too
                         lambda: f"a frame after the chat view took the last chunk ({len(frames)} frames, the last "
                                 f"at {frames[-1] if frames else 0:.3f}; {len(taken)} taken, the last growth at "
                                 f"{last_growth():.3f})", pilot=pilot)
        return done


def last_growth() -> float:
    """When the chat view last took a longer reply (a last call with the same text draws nothing new)."""
    longest, at = -1, 0.0
    for time_taken, length in taken:
        if length > longest:
            longest, at = length, time_taken
    return at


def lags(finished: float) -> list[float]:
    """Per chunk: ms from its arrival to the first frame after the chat view took a reply containing it."""
    out = []
    taken_times = [t for t, _ in taken]
    for arrived, length in arrivals:
        start = bisect.bisect_left(taken_times, arrived)
        took = next((t for t, n in taken[start:start + 2000] if n >= length), None)
        if took is None:
            out.append((finished - arrived) * 1000)
            continue
        frame = frames[bisect.bisect_left(frames, took)] if frames and frames[-1] >= took else finished
        out.append((frame - arrived) * 1000)
    return out


def describe(label: str, values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[max(0, int(len(ordered) * 0.95) - 1)]
    return f"{label}: median {statistics.median(ordered):.1f} ms, p95 {p95:.1f} ms, max {ordered[-1]:.1f} ms"


def fake_server(chunks: int, rate: float):
    """A real loopback HTTP server streaming `chunks` chunks of 10 words at `rate` a second under /long."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from fault_server import FaultServer, Handler, chunk

    words = "hello world this is a tiny random model that says the quick brown fox jumps over lazy dog".split()

    class Long(Handler):
        def s_long(self) -> None:
            self._start_chunked()
            self._events([chunk(delta={"role": "assistant", "content": None})])
            rng, due = random.Random(1), time.perf_counter()
            for _ in range(chunks):
                self._events([chunk(" ".join(rng.choice(words) for _ in range(10)) + " ")])
                due += 1 / rate
                time.sleep(max(0.0, due - time.perf_counter()))  # the stream's rate is what is measured against
            self._events([chunk(finish_reason="length")])
            self._send("data: [DONE]\n\n")
            self._finish()

    server = FaultServer(delay=0.0)
    server.httpd.RequestHandlerClass = Long
    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tokens", nargs="?", type=int, default=20_000)
    parser.add_argument("--port", type=int, default=18957)
    parser.add_argument("--fake", action="store_true", help="a loopback SSE server instead of llama.cpp")
    parser.add_argument("--chunks", type=int, default=2000)
    parser.add_argument("--rate", type=float, default=100.0)
    args = parser.parse_args()
    if args.fake:
        with fake_server(args.chunks, args.rate) as server:
            instrument()
            os.environ["XDG_DATA_HOME"] = tempfile.mkdtemp()
            load = os.getloadavg()
            print(f"load: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (1, 5, 15 min), {os.cpu_count()} CPUs; "
                  f"fake SSE server: {args.chunks} chunks of 10 words at {args.rate:.0f}/s")
            finished = asyncio.run(run(server.url + "/long", args.chunks * 10))
        report(finished)
        return
    script = SHARED / "server" / "start-llama-server.sh"
    env = {**os.environ, "LLAMA_CTX": str(max(8192, args.tokens + 1024))}
    url = subprocess.run(["bash", str(script), str(args.port)], capture_output=True, text=True, check=True,
                         env=env).stdout.strip()
    try:
        instrument()
        os.environ["XDG_DATA_HOME"] = tempfile.mkdtemp()
        load = os.getloadavg()
        print(f"load: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (1, 5, 15 min), {os.cpu_count()} CPUs")
        finished = asyncio.run(run(url, args.tokens))
    finally:
        subprocess.run(["bash", str(script), "stop", str(args.port)], capture_output=True)
    report(finished)


def report(finished: float) -> None:
    if not arrivals:
        raise SystemExit("no chunk arrived")
    values = lags(finished)
    span = arrivals[-1][0] - arrivals[0][0]
    tenth = max(1, len(values) // 10)
    print(f"{len(arrivals)} chunks, {arrivals[-1][1]:,} chars in {span:.1f} s ({len(arrivals) / span:.0f} chunks/s); "
          f"the chat view took {len(taken)} updates; {len(frames)} frames")
    print("chunk -> on screen, " + describe("all", values))
    print("chunk -> on screen, " + describe("first tenth", values[:tenth]))
    print("chunk -> on screen, " + describe("last tenth", values[-tenth:]))
    print(f"last chunk -> reply final on screen {(finished - arrivals[-1][0]) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
