"""What recording one request of a long agent run costs the tap, at its start against at its end. An agent's tool
loop through the tap in front of the real llama.cpp server from ../shared (its own template and tokenizer, learned
from it as for a user): a system prompt, tools, and turns of a tool call and its result, each request the whole
conversation again, as agents send it. The recording thread's time for each request (its start and its end) is
noted. Goal (issue 39): the median of the last 20 requests within 1.5x of the first 20's (before: 64 ms at the
start of a 300-request run, 246 ms at its end).

    .venv/bin/python -m tests.benchmarks.bench_tap_agent_run [--requests 300] [--port 8094]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from tap_helpers import RunningTap  # noqa: E402

SHARED = Path(os.environ.get("CTXPANE_SHARED_DIR", ROOT.parent / "shared"))
SYSTEM = "You are a coding agent working in a repository. Use the tools to read and change files. " * 30
TOOLS = [{"type": "function", "function": {
    "name": name, "description": f"{name} in the working tree: " + "details of the tool " * 15,
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}, "text": {"type": "string"}},
                   "required": ["path"]}}} for name in ("read_file", "write_file", "list_folder", "run_tests")]


def agent_turn(number: int) -> list[dict]:
    """One step of the loop: the assistant's tool call and the tool's result (a file's lines)."""
    call = {"id": f"call_{number}", "type": "function", "function": {
        "name": TOOLS[number % len(TOOLS)]["function"]["name"], "arguments": json.dumps({"path": f"src/m{number}.py"})}}
    result = "\n".join(f"def f{number}_{line}(x):\n    return x + {line}" for line in range(4))
    return [{"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call["id"], "content": result}]


def timed_recorder(tap: RunningTap) -> dict[int, float]:
    """Seconds the recording thread spent on each exchange (its start and its end), by exchange number."""
    spent: dict[int, float] = {}
    recorder = tap.recorder
    for step_name in ("begin", "finish"):
        step = getattr(recorder, step_name)

        def timed(exchange, step=step):
            started = time.perf_counter()
            try:
                step(exchange)
            finally:
                spent[exchange.number] = spent.get(exchange.number, 0.0) + time.perf_counter() - started
        setattr(recorder, step_name, timed)
    return spent


def run(url: str, requests: int) -> list[float]:
    tap = RunningTap(url, Path(tempfile.mkdtemp(prefix="bench-tap-agent-")))
    spent = timed_recorder(tap)
    try:
        history = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Fix the failing test."}]
        with httpx.Client(timeout=120) as client:
            for number in range(requests):
                body = {"model": "tiny", "messages": history, "tools": TOOLS, "max_tokens": 1, "temperature": 0}
                client.post(f"{tap.url}/chat/completions", json=body).raise_for_status()
                history = history + agent_turn(number)
        tap.settle(timeout=600)
        numbers = sorted(spent)
        assert len(numbers) >= requests, f"{len(numbers)} of {requests} requests recorded"
        assert not tap.recorder.failures, f"{tap.recorder.failures} recording failures"
        return [spent[n] for n in numbers[-requests:]]
    finally:
        tap.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--port", type=int, default=8094)
    parser.add_argument("--url", help="a llama.cpp server already running (its /v1 address), started with "
                        "LLAMA_CTX=32768: the run's last request is ~20,000 tokens")
    options = parser.parse_args()
    script = SHARED / "server" / "start-llama-server.sh"
    url = options.url
    if url is None:
        if not script.exists():
            print(f"the real llama.cpp server is needed: {script} is absent", file=sys.stderr)
            return 2
        url = subprocess.run(["bash", str(script), str(options.port)], capture_output=True, text=True, check=True,
                             env={**os.environ, "LLAMA_CTX": "32768"}).stdout.strip().splitlines()[-1]
    try:
        load = os.getloadavg()[0]
        seconds = run(url, options.requests)
        first, last = statistics.median(seconds[:20]), statistics.median(seconds[-20:])
        print(f"{options.requests} requests of an agent's tool loop: recording took {first * 1000:.1f} ms per request "
              f"at the start (median of the first 20), {last * 1000:.1f} ms at the end (the last 20): ratio "
              f"{last / first:.2f} (goal <= 1.5); total {sum(seconds):.1f} s; load average {load:.2f}")
    finally:
        if options.url is None:
            subprocess.run(["bash", str(script), "stop", str(options.port)], capture_output=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
