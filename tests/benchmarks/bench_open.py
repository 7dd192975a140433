"""Opening a long session in the app, against opening an empty one, measured in the same run.

    .venv/bin/python -m tests.benchmarks.bench_open [--requests 1000] [--tokens 100000] [--runs 3]

Each opening runs in a process of its own (the app's start-up as a user gets it, no state carried
over), headless through Textual's pilot. Milestones, in seconds from the app object's creation:
  ready        the first screen is mounted (the pilot can drive it)
  echo@ready   a key pressed at `ready` is echoed in the composer (the event loop was free)
  shown        the session is adopted: its messages are in the chat
  interactive  shown, and then a key pressed is echoed: the first screen of THIS session answers
  boundary     the pane shows a view computed against the restored last request (its cache boundary)
The goal (issue 10): `interactive` of the long session <= 1.2x that of the empty session.
"""

from __future__ import annotations

import argparse
import asyncio
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

SIZE = (150, 42)
TIMEOUT = 120.0


def long_session(requests: int, tokens: int):
    """A keep-all chat: `requests` user turns, each answered, about `tokens` o200k tokens in all.

    Every record holds the body that was sent (the whole conversation up to it), as the app sends it; the file
    (version 2) keeps each message once.
    """
    from tui.context.messages import Message, Provenance
    from tui.sessions.model import RequestRecord, Session

    rng = random.Random(11)
    words = max(1, round(tokens / (2 * requests) / 1.25))  # this prose is ~1.25 o200k tokens a word

    def text() -> str:
        return " ".join(rng.choice(PROSE) for _ in range(words))

    session = Session(title=f"{requests} requests", tokenizer="o200k_base")
    messages = [Message("system", "You are a careful assistant.", provenance=Provenance("system_prompt", True),
                        id="sys")]
    wire: list[dict] = [{"role": "system", "content": messages[0].content}]
    for number in range(1, requests + 1):
        question = Message("user", text(), provenance=Provenance("user", True), id=f"m{len(messages)}")
        messages.append(question)
        wire.append({"role": "user", "content": question.content})
        sent_tokens = round(sum(len(m["content"].split()) for m in wire) * 1.25)
        session.requests.append(RequestRecord(
            number=number, time="2026-11-02T09:00:00+00:00", body={"model": "m", "messages": list(wire)},
            reply={"content": "ok"}, document_tokens=sent_tokens, keep_all_tokens=sent_tokens,
            template="chatml", tokenizer="o200k_base", message_count=len(messages),
            message_ids=[m.id for m in messages]))
        answer = Message("assistant", text(), provenance=Provenance("model", True), id=f"m{len(messages)}")
        messages.append(answer)
        wire.append({"role": "assistant", "content": answer.content})
    session.messages = messages
    return session


def write_sessions(folder: Path, requests: int, tokens: int) -> tuple[Path, Path]:
    from tui.sessions.model import Session
    from tui.sessions.store import save_session

    empty, long = folder / "empty.ctxpane.json", folder / "long.ctxpane.json"
    save_session(Session(title="empty", tokenizer="o200k_base"), empty)
    save_session(long_session(requests, tokens), long)
    return empty, long


# -- one opening, in a child process ------------------------------------------------------------------
async def open_once(path: Path) -> dict:
    from tui.app.chat.composer import Composer

    from tui.sessions.store import load_session

    expected = load_session(path).session
    wanted_messages, has_requests = len(expected.messages), bool(expected.requests)
    del expected
    clock = Stopwatch(TIMEOUT)
    app = opened_app(path)
    since, until = clock.since, clock.until
    marks: dict[str, float | None] = {}

    async with app.run_test(size=SIZE) as pilot:
        marks["ready"] = since()
        composer = app.query_one(Composer)
        await pilot.press("a")
        marks["echo@ready"] = await until(lambda: composer.text.endswith("a"))
        marks["shown"] = await until(lambda: app.session_file == path
                                     and len(app.wb.session.messages) == wanted_messages)
        await pilot.press("b")
        marks["interactive"] = await until(lambda: app.query_one(Composer).text.endswith("b"))

        def boundary_shown() -> bool:
            view = app.wb.view
            return view is not None and not view.prefix.cause.startswith("first request")
        marks["boundary"] = await until(boundary_shown) if has_requests else None
        await app.workers.wait_for_complete()
    return marks


def child(path: str) -> None:
    print(json.dumps(asyncio.run(open_once(Path(path)))))


def measure(path: Path, env: dict) -> dict:
    result = subprocess.run([sys.executable, "-m", "tests.benchmarks.bench_open", "--child", str(path)],
                            capture_output=True, text=True, env=env, timeout=TIMEOUT * 3)
    if result.returncode:
        raise SystemExit(f"the child failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def median(runs: list[dict], key: str) -> float | None:
    values = [run[key] for run in runs]
    return None if any(v is None for v in values) else statistics.median(values)


def show(label: str, value: float | None, base: float | None) -> str:
    if value is None:
        return f"{label} never (within {TIMEOUT:.0f} s)"
    ratio = f" ({value / base:.2f}x)" if base else ""
    return f"{label} {value:.3f} s{ratio}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--tokens", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    folder = Path(tempfile.mkdtemp(prefix="ctxpane-bench-open-"))
    env = {**os.environ, **{name: str(folder / name.lower()) for name in
                            ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME")}}
    env.pop("OPENAI_BASE_URL", None)
    made = time.perf_counter()
    empty, long = write_sessions(folder, args.requests, args.tokens)
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f} (1, 5, 15 min)")
    print(f"session: {args.requests} requests, ~{args.tokens:,} tokens, {long.stat().st_size / 1e6:.1f} MB "
          f"(written in {time.perf_counter() - made:.1f} s)")
    from tui.sessions.store import MAX_SESSION_BYTES
    if long.stat().st_size > MAX_SESSION_BYTES:  # every record holds the whole body it sent: the file grows
        print(f"NOT OPENED: the file is over the {MAX_SESSION_BYTES >> 20} MiB a session file may be (each of "
              f"its {args.requests} records holds the whole conversation it sent, so the file grows with the "
              "square of the chat). Try fewer --tokens.")
        raise SystemExit(2)
    runs: dict[Path, list[dict]] = {empty: [], long: []}
    for _ in range(args.runs):  # alternated, so a change in the machine's load hits both
        for path in (empty, long):
            runs[path].append(measure(path, env))
    base = {key: median(runs[empty], key) for key in ("ready", "echo@ready", "shown", "interactive")}
    for name, path in (("empty", empty), ("long", long)):
        figures = [show(key, median(runs[path], key), base.get(key) if path is long else None)
                   for key in ("ready", "echo@ready", "shown", "interactive", "boundary") if
                   not (path is empty and key == "boundary")]
        print(f"{name:>5}: " + " · ".join(figures))
    ratio = median(runs[long], "interactive") / base["interactive"]
    print(f"interactive ratio long/empty: {ratio:.2f}x (goal <= 1.2x) -> {'met' if ratio <= 1.2 else 'MISSED'}")
    print(f"runs: {args.runs} each, medians; files in {folder}")


if __name__ == "__main__":
    main()
