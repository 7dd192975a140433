"""The chat transcript at scale: open a 10,000-message session, scroll it a page, stream a long reply into it.

    .venv/bin/python -m tests.benchmarks.bench_transcript [--messages 10000] [--runs 3] [--chunks 2000]

open    Each opening runs in a child process (start-up as a user gets it), headless through Textual's
        pilot, for the big session and a 10-message baseline, alternated. Milestones in seconds from
        the app object's creation: `shown` = every message laid out in the chat and the last one drawn
        on screen; `interactive` = after that, a key sent as the terminal would (App.simulate_key) is
        echoed in the composer; `pane` = the context pane has its first view (computed in a worker).
        Goal (issue 10): big `interactive` <= 1 s.
scroll  In one process, once the app is idle (the pane's view computed): PageDown in the chat, (a) the view's work (move the
        cursor, scroll, draw every row on screen from a cold strip cache), and (b) the key sent as the
        terminal would (App.simulate_key) up to the frame that shows the move. Goal: a page <= 16 ms.
resize  The chat view alone (no context pane) with `--messages` messages of at least `--chars` characters:
        the longest stall of the event loop (a task that wakes every millisecond) while the session is
        shown, while the terminal is resized four times, and while Home, End and PageUp are pressed.
        Goal: no stall over 100 ms.
stream  A reply growing by `--chunks` chunks of ~10 tokens (~20k tokens in all) fed to the chat panel
        as the app does (the controller's ReplyGrew), each followed by drawing every row on screen; per-chunk
        cost over the first and the last tenth of the reply. Goal: the end no slower than the start.
        (End to end against the real server: tests/benchmarks/bench_stream.py.)
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.benchmarks.corpus import PROSE
from tests.benchmarks.stopwatch import Stopwatch, opened_app
from tests.waiting import eventually

SIZE = (150, 42)
TIMEOUT = 120.0


def session_of(count: int, seed: int = 3, chars: int = 0):
    """`count` messages, user and assistant in turn, 5 to 60 words each (more up to `chars` characters),
    a code block every 25th."""
    from tui.context.messages import Message, Provenance
    from tui.sessions.model import Session

    rng = random.Random(seed)
    session = Session(title=f"{count} messages", tokenizer="o200k_base")
    for i in range(count):
        role = "user" if i % 2 == 0 else "assistant"
        text = f"[{i}] " + " ".join(rng.choice(PROSE) for _ in range(rng.randint(5, 60)))
        while len(text) < chars:
            text += " " + rng.choice(PROSE)
        if i % 25 == 24:
            text += "\n```python\n" + "\n".join(f"def f{j}(x):\n    return x * {j}" for j in range(6)) + "\n```"
        session.messages.append(Message(role, text, provenance=Provenance("user" if role == "user" else "model"),
                                        id=f"m{i}"))
    return session


def stats(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[max(0, int(len(ordered) * 0.95) - 1)]


async def idle(app) -> None:
    """Wait for the app's workers; a rebuild that a newer one replaced ends cancelled, which is fine."""
    from textual.worker import WorkerCancelled
    for _ in range(20):
        try:
            await app.workers.wait_for_complete()
            return
        except WorkerCancelled:
            continue


def draw_visible(chat) -> None:
    for y in range(chat.size.height):
        chat.render_line(y)


# -- open, in a child process -------------------------------------------------------------------------
async def open_once(path: Path, count: int) -> dict:
    from tui.app.chat.transcript import ChatView
    from tui.app.chat.composer import Composer

    clock = Stopwatch(TIMEOUT)
    app = opened_app(path)
    since, until = clock.since, clock.until
    marks: dict[str, float | None] = {}

    last = f"[{count - 1}] "
    async with app.run_test(size=SIZE) as pilot:
        marks["ready"] = since()
        chat = app.query_one(ChatView)

        def shown() -> bool:
            return len(chat.layout_model.entries) == count and any(last in line for line in chat.visible_lines())
        marks["shown"] = await until(shown)
        app.simulate_key("b")  # as the terminal would send it: no pilot waiting in between
        marks["interactive"] = await until(lambda: app.query_one(Composer).text.endswith("b"))
        marks["pane"] = await until(lambda: app.wb.view is not None)  # the context pane's first view
        await idle(app)
        await pilot.pause()
    return marks


def measure_open(path: Path, count: int, env: dict) -> dict:
    result = subprocess.run([sys.executable, "-m", "tests.benchmarks.bench_transcript", "--child", str(path),
                             "--messages", str(count)], capture_output=True, text=True, env=env,
                            timeout=TIMEOUT * 3)
    if result.returncode:
        raise SystemExit(f"the child failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def bench_open(folder: Path, count: int, runs: int, env: dict) -> None:
    from tui.sessions.store import save_session
    paths = {}
    for n in (10, count):
        paths[n] = folder / f"chat-{n}.ctxpane.json"
        save_session(session_of(n), paths[n])
    results: dict[int, list[dict]] = {10: [], count: []}
    for _ in range(runs):  # alternated, so a change in the machine's load hits both
        for n in (10, count):
            results[n].append(measure_open(paths[n], n, env))
    base = {key: statistics.median(r[key] for r in results[10]) for key in ("ready", "shown", "interactive")}
    base["pane"] = statistics.median(r["pane"] for r in results[10])
    for n in (10, count):
        cells = []
        for key in ("ready", "shown", "interactive", "pane"):
            values = [r[key] for r in results[n]]
            if any(v is None for v in values):
                cells.append(f"{key} never")
                continue
            value = statistics.median(values)
            cells.append(f"{key} {value:.3f} s" + (f" ({value / base[key]:.2f}x)" if n != 10 else ""))
        print(f"open {n:>6} messages ({paths[n].stat().st_size / 1e6:.1f} MB): " + " · ".join(cells))
    interactive = statistics.median(r["interactive"] for r in results[count])
    print(f"open goal: {count} messages interactive <= 1 s: {interactive:.3f} s -> "
          f"{'met' if interactive <= 1.0 else 'MISSED'} (medians of {runs})")


# -- scroll, in this process --------------------------------------------------------------------------
async def scroll_once(path: Path, pages: int) -> dict:
    from tui.app.app import CtxpaneApp, LaunchOptions
    from tui.app.chat.transcript import ChatView

    app = CtxpaneApp(LaunchOptions(file=path, flags={"no_scan": True}, offline=True,
                                   sessions_folder=path.parent / "sessions"))
    async with app.run_test(size=SIZE) as pilot:
        chat = app.query_one(ChatView)
        await eventually(lambda: chat.layout_model.entries and app.wb.view is not None, TIMEOUT,  # the first view
                         "the transcript and the pane's first view", pilot=pilot, poll=0.05)
        await idle(app)
        await pilot.pause()
        chat.focus()
        await pilot.pause()
        chat.action_move_to(0)
        work, pressed = [], []
        direction = 1
        for _ in range(pages):
            if chat.selected == len(chat._messages) - 1 and direction > 0 or chat.selected == 0 and direction < 0:
                direction = -direction
            chat.painter.clear()  # every page drawn from scratch, as new rows are
            start = time.perf_counter()
            chat.action_page(direction)
            draw_visible(chat)
            work.append((time.perf_counter() - start) * 1000)
        chat.action_move_to(0)
        await pilot.pause()
        frames: list[float] = []
        moved: list[float] = []
        display, page = app._display, chat.action_page

        def timed_display(screen, renderable):
            if renderable is not None:
                frames.append(time.perf_counter())
            return display(screen, renderable)

        def timed_page(direction: int) -> None:
            page(direction)
            moved.append(time.perf_counter())
        app._display, chat.action_page = timed_display, timed_page
        direction = 1
        for _ in range(min(pages, 30)):
            if chat.selected == len(chat._messages) - 1 and direction > 0 or chat.selected == 0 and direction < 0:
                direction = -direction
            moved.clear()
            start = time.perf_counter()
            app.simulate_key("pagedown" if direction > 0 else "pageup")  # as the terminal would send it
            try:
                await eventually(lambda: moved and frames and frames[-1] >= moved[0], 5, "a frame after the page",
                                 poll=0.0005)
            except AssertionError:
                raise SystemExit("PageDown: the key was not handled, or no frame followed, within 5 s") from None
            shown = frames[bisect.bisect_left(frames, moved[0])]  # the first frame after the page moved
            pressed.append((shown - start) * 1000)
            await pilot.pause(0.05)  # a pause between two presses, as a reader's
        return {"work": stats(work), "pilot": stats(pressed), "rows": chat.layout_model.height}


def bench_scroll(folder: Path, count: int, pages: int) -> None:
    results = {n: asyncio.run(scroll_once(folder / f"chat-{n}.ctxpane.json", pages)) for n in (10, count)}
    base = results[10]
    for n, result in results.items():
        work, pilot = result["work"], result["pilot"]
        ratio = "" if n == 10 else (f" ({work[0] / base['work'][0]:.2f}x / {pilot[0] / base['pilot'][0]:.2f}x "
                                    "the 10-message medians)")
        print(f"scroll a page, {n:>6} messages ({result['rows']:,} rows): view work median {work[0]:.2f} ms "
              f"p95 {work[1]:.2f} ms | PageDown key to the frame showing it: median {pilot[0]:.1f} ms p95 {pilot[1]:.1f} ms"
              + ratio)
    p95 = results[count]["work"][1]
    print(f"scroll goal: a page <= 16 ms: view work p95 {p95:.2f} ms -> {'met' if p95 <= 16 else 'MISSED'}")


# -- resize, in this process ------------------------------------------------------------------------
async def resize_once(count: int, chars: int) -> dict:
    from textual.app import App

    from tui.app.chat.transcript import ChatView

    class One(App):
        def compose(self):
            yield ChatView()

    messages = session_of(count, chars=chars).messages
    app, gaps, phase = One(), {}, ["idle"]
    async with app.run_test(size=SIZE) as pilot:
        chat = app.query_one(ChatView)
        done = asyncio.Event()

        async def beat() -> None:  # the longest time the loop did not come back to this task, per phase
            last = time.perf_counter()
            while not done.is_set():
                await asyncio.sleep(0.001)
                now = time.perf_counter()
                gaps[phase[0]] = max(gaps.get(phase[0], 0.0), now - last)
                last = now
        task = asyncio.create_task(beat())
        # Each phase lasts a while (the pauses below): the longest stall of the loop within it is what is measured.
        await pilot.pause(0.05)
        phase[0] = "show"
        chat.show(messages)
        await pilot.pause(0.2)
        phase[0] = "resize"
        for size in ((110, 42), (150, 42), (90, 30), SIZE):
            await pilot.resize_terminal(*size)
            await pilot.pause(0.1)
        chat.focus()
        phase[0] = "keys"
        for key in ("home", "end", "pageup", "pageup", "pageup", "home", "pagedown"):
            await pilot.press(key)
            await pilot.pause(0.02)
        phase[0] = "idle"
        last_shown = any(f"[{count - 1}]" in line for line in chat.visible_lines()) or chat.selected is not None
        done.set()
        await task
        chars_total = sum(len(m.text()) for m in messages)
    return {"gaps": gaps, "chars": chars_total, "rows": chat.layout_model.height, "ok": last_shown}


def bench_resize(count: int, chars: int) -> None:
    result = asyncio.run(resize_once(count, chars))
    gaps = result["gaps"]
    cells = " · ".join(f"{name} {gaps.get(name, 0) * 1000:.0f} ms" for name in ("show", "resize", "keys"))
    print(f"resize {count} messages ({result['chars'] / 1e6:.1f} M chars, {result['rows']:,} rows): longest loop "
          f"stall while {cells}")
    worst = max(gaps.get(name, 0) for name in ("show", "resize", "keys")) * 1000
    print(f"resize goal: no stall over 100 ms: {worst:.0f} ms -> {'met' if worst <= 100 else 'MISSED'}")


# -- streaming, in this process -----------------------------------------------------------------------
async def stream_once(chunks: int) -> dict:
    from tui.app.app import CtxpaneApp, LaunchOptions
    from tui.app.chat.panel import ChatPanel
    from tui.app.chat.transcript import ChatView
    from tui.app.chat.wrap import wrap_text
    from tui.app.messages import ReplyArrived, ReplyBegan, ReplyFinished
    from tui.controller.events import ReplyGrew

    rng = random.Random(8)
    app = CtxpaneApp(LaunchOptions(flags={"no_scan": True}, offline=True))
    async with app.run_test(size=SIZE) as pilot:
        await eventually(lambda: app.wb.view is not None, TIMEOUT, "the sample session's view", pilot=pilot)
        await idle(app)
        panel, chat = app.query_one(ChatPanel), app.query_one(ChatView)
        panel.on_reply_began(ReplyBegan())  # what the app delivers for the controller's events
        content, costs = "", []
        for i in range(chunks):  # ~10 tokens a chunk; a paragraph break now and then, as replies have
            told = len(content)
            content += " ".join(rng.choice(PROSE) for _ in range(8)) + ("\n\n" if i % 40 == 39 else " ")
            start = time.perf_counter()
            panel.on_reply_arrived(ReplyArrived(ReplyGrew(content, told)))
            draw_visible(chat)
            costs.append((time.perf_counter() - start) * 1000)
            if i % 50 == 0:
                await pilot.pause()  # let the app paint now and then, as it does between chunks
        start = time.perf_counter()
        wrap_text(content, chat.text_width)
        naive = (time.perf_counter() - start) * 1000
        panel.on_reply_finished(ReplyFinished())
        tenth = max(1, chunks // 10)
        return {"start": stats(costs[:tenth]), "end": stats(costs[-tenth:]), "all": stats(costs),
                "chars": len(content), "rows": chat.layout_model.height, "naive": naive}


def bench_stream(chunks: int) -> None:
    result = asyncio.run(stream_once(chunks))
    start, end, every = result["start"], result["end"], result["all"]
    print(f"stream {chunks} chunks, {result['chars']:,} chars, {result['rows']:,} rows: per chunk (wrap + draw "
          f"the screen) first tenth median {start[0]:.3f} ms p95 {start[1]:.3f} ms | last tenth median "
          f"{end[0]:.3f} ms p95 {end[1]:.3f} ms | all p95 {every[1]:.3f} ms")
    print(f"stream: wrapping the whole reply once at its end (what a full re-wrap per chunk costs) "
          f"{result['naive']:.2f} ms")
    ratio = end[1] / start[1]
    print(f"stream goal: end no slower than start: p95 end/start {ratio:.2f}x -> "
          f"{'met' if ratio <= 1.25 else 'MISSED'} (1.25x allowed for noise)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--pages", type=int, default=60)
    parser.add_argument("--chunks", type=int, default=2000)
    parser.add_argument("--chars", type=int, default=0, help="resize: characters a message at least")
    parser.add_argument("--only", choices=("open", "scroll", "resize", "stream"))
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(open_once(Path(args.child), args.messages))))
        return
    folder = Path(tempfile.mkdtemp(prefix="ctxpane-bench-transcript-"))
    env = {**os.environ, **{name: str(folder / name.lower()) for name in
                            ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME")}}
    env.pop("OPENAI_BASE_URL", None)
    os.environ.update({k: v for k, v in env.items() if k.startswith("XDG_")})
    load = os.getloadavg()
    print(f"load: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (1, 5, 15 min), {os.cpu_count()} CPUs")
    if args.only in (None, "open", "scroll"):
        if args.only == "scroll":
            from tui.sessions.store import save_session
            for n in (10, args.messages):
                save_session(session_of(n), folder / f"chat-{n}.ctxpane.json")
        else:
            bench_open(folder, args.messages, args.runs, env)
        if args.only != "open":
            bench_scroll(folder, args.messages, args.pages)
    if args.only in (None, "resize"):
        bench_resize(args.messages, args.chars)
    if args.only in (None, "stream"):
        bench_stream(args.chunks)


if __name__ == "__main__":
    main()
