"""The tap's memory after large streamed replies, and once it is idle. Goal (issue 39, item 5): the tap's resident
memory after 24 streamed replies of 30 MB each is under 300 MB, and it is returned when idle (before: 693 MB, and it
stayed there).

    .venv/bin/python -m tests.benchmarks.bench_tap_memory [--replies 24] [--megabytes 30] [--concurrent 1] [--idle 10]

The tap runs as the real command (`ctxpane tap --no-ui`, its own process, recording as it does for a user) in front
of an aiohttp upstream in this process that streams chat-completions SSE replies of --megabytes each, in many chunks.
A client (httpx, here) sends --replies streamed requests, --concurrent at a time, and reads each reply whole. The tap's
resident memory (VmRSS of /proc/PID/status) is read once every reply is recorded (its line printed), and again after
--idle seconds with no traffic; its peak (VmHWM) beside them. Every request must be in the session files afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from session_files import session_data  # noqa: E402
from tap_helpers import served  # noqa: E402

GOAL_MB = 300
PIECE_CHARS = 3000  # characters of content in each streamed chunk: ~10,000 chunks make a 30 MB reply


def events(megabytes: int) -> list[bytes]:
    """One reply's SSE events, made once and sent for every request (the upstream's cost stays out of the timing)."""
    count = megabytes * 1024 * 1024 // (PIECE_CHARS + 120)
    found = []
    for number in range(count):
        text = f"{number:08d} " + "x" * (PIECE_CHARS - 9)
        payload = {"id": "m", "object": "chat.completion.chunk", "model": "bench",
                   "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}
        found.append(f"data: {json.dumps(payload)}\n\n".encode())
    usage = {"prompt_tokens": 10, "completion_tokens": count, "total_tokens": count + 10}
    found.append(f"data: {json.dumps({**payload, 'choices': [{'index': 0, 'delta': {}, 'finish_reason': 'stop'}], 'usage': usage})}\n\n".encode())
    found.append(b"data: [DONE]\n\n")
    return found


def upstream(reply: list[bytes]):
    from aiohttp import web

    async def stream(request: web.Request) -> web.StreamResponse:
        await request.read()
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for event in reply:
            await response.write(event)
        await response.write_eof()
        return response

    async def models(request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "bench"}]})

    app = web.Application()
    app.router.add_post("/v1/chat/completions", stream)
    app.router.add_get("/v1/models", models)
    return served(app)


def start_tap(upstream_url: str, folder: str) -> tuple[subprocess.Popen, str, queue.SimpleQueue]:
    """The tap's process, its address, and its output lines after the first (read on a thread of their own)."""
    process = subprocess.Popen([sys.executable, "-m", "tui", "tap", "--upstream", upstream_url, "--port", "0",
                                "--no-ui", "--session-dir", folder], stdout=subprocess.PIPE, text=True,
                               cwd=str(ROOT), env={**os.environ, "PYTHONPATH": str(ROOT)})
    first = process.stdout.readline()
    url = first.split("listening on ", 1)[1].split(" ", 1)[0]
    lines: queue.SimpleQueue[str] = queue.SimpleQueue()
    threading.Thread(target=lambda: [lines.put(line) for line in process.stdout], daemon=True).start()
    return process, url, lines


def memory(pid: int) -> tuple[float, float]:
    """(resident, peak resident) megabytes of the process."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def read_reply(client: httpx.Client, url: str, number: int) -> int:
    body = {"model": "bench", "stream": True, "messages": [{"role": "user", "content": f"Reply {number}: go on."}]}
    size = 0
    with client.stream("POST", f"{url}/chat/completions", json=body) as answer:
        answer.raise_for_status()
        for chunk in answer.iter_bytes():
            size += len(chunk)
    return size


def recorded(lines: queue.SimpleQueue, count: int, timeout: float) -> list[str]:
    """The tap's lines for `count` finished requests (printed once each is recorded)."""
    found, deadline = [], time.monotonic() + timeout
    while len(found) < count:
        line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
        if line.startswith("#"):
            found.append(line)
    return found


def requests_in(folder: str) -> int:
    return sum(len(session_data(path)["requests"]) for path in Path(folder).glob("*.json"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replies", type=int, default=24)
    parser.add_argument("--megabytes", type=int, default=30)
    parser.add_argument("--concurrent", type=int, default=1)
    parser.add_argument("--idle", type=float, default=10.0)
    args = parser.parse_args()
    loop, port = upstream(events(args.megabytes))
    folder = tempfile.mkdtemp(prefix="bench-tap-memory-")
    process, url, lines = start_tap(f"http://127.0.0.1:{port}/v1", folder)
    started = time.perf_counter()
    try:
        before = memory(process.pid)[0]
        with httpx.Client(timeout=300, limits=httpx.Limits(max_connections=args.concurrent)) as client, \
                ThreadPoolExecutor(args.concurrent) as pool:
            sizes = list(pool.map(lambda n: read_reply(client, url, n), range(1, args.replies + 1)))
        done = recorded(lines, args.replies, 600)
        took = time.perf_counter() - started
        after, peak = memory(process.pid)
        time.sleep(args.idle)
        idle, _ = memory(process.pid)
    finally:
        process.terminate()
        process.wait(120)
        loop.stop()
    incomplete = [line for line in done if "-> 200" not in line]
    kept = requests_in(folder)
    print(f"{args.replies} streamed replies of {sum(sizes) / len(sizes) / 2 ** 20:.1f} MB, {args.concurrent} at a time, "
          f"in {took:.1f} s; load average {os.getloadavg()[0]:.2f}")
    print(f"tap RSS at start            : {before:7.1f} MB")
    print(f"tap RSS after every reply   : {after:7.1f} MB  (goal < {GOAL_MB} MB: {'met' if after < GOAL_MB else 'MISSED'})")
    print(f"tap RSS after {args.idle:g} s idle      : {idle:7.1f} MB  (goal < {GOAL_MB} MB: "
          f"{'met' if idle < GOAL_MB else 'MISSED'})")
    print(f"tap peak RSS (VmHWM)        : {peak:7.1f} MB")
    print(f"recorded: {len(done)} lines printed, {kept} requests in the session files "
          f"({'all' if kept == args.replies and not incomplete else 'NOT all'})")
    return 0 if kept == args.replies and not incomplete else 1


if __name__ == "__main__":
    sys.exit(main())
