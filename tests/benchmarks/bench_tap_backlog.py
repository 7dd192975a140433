"""Does the tap's recording keep up with the traffic over a long run? Conversations through the tap in front of the
real llama.cpp server from ../shared (its cache model learned from /props and /slots, as for a user), one after
another, each a question and a follow-up (max_tokens 1), sent by a process of its own as an agent's would be. Every 100 conversations it prints how far the recording is
behind: the requests ended upstream and not yet recorded, and how long ago the oldest of them ended; at the end, how
long the recording took to catch up. Goal (issue 26): within a second of the traffic after 1,500 conversations
(before the cache model was bounded it was 336 s behind).

    .venv/bin/python -m tests.benchmarks.bench_tap_backlog [--conversations 1500]
"""

from __future__ import annotations

import argparse
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from tap_helpers import RunningTap  # noqa: E402

SHARED = Path(os.environ.get("CTXPANE_SHARED_DIR", ROOT.parent / "shared"))


def behind(tap: RunningTap) -> tuple[int, float]:
    """(requests ended upstream and not recorded yet, seconds since the oldest of them ended)."""
    now, waiting = time.time(), [t for t in list(tap.recorder.tapped.values())
                                 if t.exchange.ended is not None and not t.done]
    return len(waiting), max((now - t.exchange.ended for t in waiting), default=0.0)


def drive(url: str, count: int) -> None:
    """The traffic, from a process of its own (as an agent's is): each conversation a question and a follow-up."""
    with httpx.Client(timeout=120) as client:
        for number in range(1, count + 1):
            history = [{"role": "user", "content": f"Conversation {number}: name a colour."}]
            for _turn in range(2):
                body = {"model": "tiny", "messages": history, "max_tokens": 1, "temperature": 0}
                reply = client.post(f"{url}/chat/completions", json=body).json()
                history += [reply["choices"][0]["message"], {"role": "user", "content": "And another?"}]
            if number % 100 == 0:
                print(number, flush=True)


def watch(tap: RunningTap, traffic: subprocess.Popen, started: float) -> float:
    """The worst lag seen while the traffic runs (looked at every 20 ms), said every 100 conversations."""
    said: queue.SimpleQueue[str] = queue.SimpleQueue()
    threading.Thread(target=lambda: [said.put(line) for line in traffic.stdout], daemon=True).start()
    worst = 0.0
    while traffic.poll() is None:
        waiting, late = behind(tap)
        worst = max(worst, late)
        while not said.empty():
            print(f"{int(said.get()):5} conversations, {time.monotonic() - started:6.1f} s: recording behind by "
                  f"{waiting} requests, the oldest ended {late:.2f} s ago", flush=True)
        time.sleep(0.02)
    return worst


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=1500)
    parser.add_argument("--port", type=int, default=8093)
    parser.add_argument("--drive", help=argparse.SUPPRESS)  # the traffic's own process
    options = parser.parse_args()
    count = options.conversations
    if options.drive:
        drive(options.drive, count)
        return 0
    script = SHARED / "server" / "start-llama-server.sh"
    if not script.exists():
        print(f"the real llama.cpp server is needed: {script} is absent", file=sys.stderr)
        return 2
    port = options.port
    url = subprocess.run(["bash", str(script), str(port)], capture_output=True, text=True, check=True,
                         env={**os.environ, "LLAMA_PARALLEL": "2"}).stdout.strip().splitlines()[-1]
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {count} conversations through the tap, "
          "sent by another process")
    tap = RunningTap(url, Path(tempfile.mkdtemp(prefix="bench-tap-backlog-")))
    started = time.monotonic()
    try:
        traffic = subprocess.Popen([sys.executable, "-m", "tests.benchmarks.bench_tap_backlog", "--drive", tap.url,
                                    "--conversations", str(count)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
        worst = watch(tap, traffic, started)
        ended = time.monotonic()
        tap.recorder.drain()
        caught_up = time.monotonic() - ended
        print(f"{count} conversations in {ended - started:.1f} s ({2 * count / (ended - started):.0f} requests/s); "
              f"after the last request the recording caught up in {caught_up:.2f} s; the worst lag seen "
              f"{worst:.2f} s (goal: within 1 s) · {len(tap.recorder.tapped)} requests recorded · "
              f"{tap.recorder.failures} failures")
    finally:
        tap.stop()
        subprocess.run(["bash", str(script), "stop", str(port)], capture_output=True)
    return 0

if __name__ == "__main__":
    raise SystemExit(main())
