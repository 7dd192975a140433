"""What the tap adds: latency per streamed chunk and for a non-streamed reply, tap against direct, same run.

    .venv/bin/python -m tests.benchmarks.bench_tap [--chunks 300] [--gap 0.005] [--calls 200] [--llama]

The tap runs as the real command (`ctxpane tap --no-ui`, its own process, recording as it does for a
user). The upstream is an aiohttp server in this process that stamps each SSE chunk with the moment it
writes it (time.perf_counter); the client (httpx, this process, another thread) notes when each chunk
arrives, so arrival - stamp is that chunk's latency, direct and through the tap, in alternating rounds.
Non-streamed: the round trip of a small JSON reply. --llama also times non-streamed calls to the real
llama.cpp server from ../shared (max_tokens 1), direct and through a second tap.
Goal (issue 13): the tap adds at most 2 ms per chunk (median).
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

from tap_helpers import served  # noqa: E402


def upstream(chunks: int, gap: float):
    import asyncio

    from aiohttp import web

    async def stream(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for number in range(chunks):
            payload = {"id": "b", "object": "chat.completion.chunk", "model": "bench",
                       "choices": [{"index": 0, "delta": {"content": f"{number} "}, "finish_reason": None}],
                       "t": time.perf_counter()}
            await response.write(f"data: {json.dumps(payload)}\n\n".encode())
            await asyncio.sleep(gap)  # the upstream's pace between chunks
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response

    async def whole(request: web.Request) -> web.Response:
        await request.read()
        return web.json_response({"id": "b", "object": "chat.completion", "model": "bench", "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "x" * 2000}, "finish_reason": "stop"}]})

    async def models(request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "bench"}]})

    app = web.Application()
    app.router.add_post("/v1/chat/completions", lambda r: stream(r) if r.query.get("s") else whole(r))
    app.router.add_get("/v1/models", models)
    return served(app)


def start_tap(upstream_url: str, folder: str) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen([sys.executable, "-m", "tui", "tap", "--upstream", upstream_url, "--port", "0",
                                "--no-ui", "--session-dir", folder], stdout=subprocess.PIPE, text=True,
                               cwd=str(ROOT), env={**os.environ, "PYTHONPATH": str(ROOT)})
    first = process.stdout.readline()
    url = first.split("listening on ", 1)[1].split(" ", 1)[0]
    return process, url


def chunk_latencies(client: httpx.Client, base: str, body: dict) -> list[float]:
    found = []
    with client.stream("POST", f"{base}/chat/completions?s=1", json=body) as response:
        for line in response.iter_lines():
            if line.startswith("data: {"):
                found.append(time.perf_counter() - json.loads(line[6:])["t"])
    return found


def round_trips(client: httpx.Client, base: str, body: dict, calls: int) -> list[float]:
    found = []
    for _ in range(calls):
        started = time.perf_counter()
        client.post(f"{base}/chat/completions", json=body).raise_for_status()
        found.append(time.perf_counter() - started)
    return found


def ms(values: list[float]) -> str:
    ordered = sorted(values)
    return (f"median {statistics.median(ordered) * 1000:.3f} ms · p95 {ordered[int(len(ordered) * 0.95)] * 1000:.3f}"
            f" ms · n={len(ordered)}")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", type=int, default=300)
    parser.add_argument("--gap", type=float, default=0.005)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--llama", action="store_true")
    args = parser.parse_args()
    loop, port = upstream(args.chunks, args.gap)
    direct_url = f"http://127.0.0.1:{port}/v1"
    folder = tempfile.mkdtemp(prefix="bench-tap-")
    process, tap_url = start_tap(direct_url, folder)
    body = {"model": "bench", "messages": [{"role": "user", "content": "go"}], "stream": True}
    direct, tapped, whole_direct, whole_tapped = [], [], [], []
    try:
        with httpx.Client(timeout=60) as client:
            chunk_latencies(client, tap_url, body)  # warm both paths (connections, the tap's engine probe)
            chunk_latencies(client, direct_url, body)
            for _ in range(args.rounds):  # alternate, so both see the same machine load
                direct += chunk_latencies(client, direct_url, body)
                tapped += chunk_latencies(client, tap_url, body)
                plain = {**body, "stream": False}
                whole_direct += round_trips(client, direct_url, plain, args.calls // args.rounds)
                whole_tapped += round_trips(client, tap_url, plain, args.calls // args.rounds)
    finally:
        process.terminate()
        process.wait(30)
        loop.stop()
    added = statistics.median(tapped) - statistics.median(direct)
    print(f"streamed chunk latency, direct : {ms(direct)}")
    print(f"streamed chunk latency, tap    : {ms(tapped)}")
    print(f"added per chunk (median)       : {added * 1000:.3f} ms  (goal <= 2 ms: {'met' if added <= 0.002 else 'MISSED'})")
    print(f"non-streamed round trip, direct: {ms(whole_direct)}")
    print(f"non-streamed round trip, tap   : {ms(whole_tapped)}")
    print(f"added per non-streamed reply   : {(statistics.median(whole_tapped) - statistics.median(whole_direct)) * 1000:.3f} ms")
    if args.llama:
        bench_llama(args.calls // 4)
    return 0


def bench_llama(calls: int) -> None:
    script = ROOT.parent / "shared" / "server" / "start-llama-server.sh"
    from conftest import free_port
    port = free_port()
    url = subprocess.run(["bash", str(script), str(port)], capture_output=True, text=True, check=True).stdout.strip()
    folder = tempfile.mkdtemp(prefix="bench-tap-llama-")
    process, tap_url = start_tap(url, folder)
    body = {"model": "tiny-qwen3", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1,
            "temperature": 0}
    try:
        with httpx.Client(timeout=60) as client:
            round_trips(client, tap_url, body, 3)
            direct = round_trips(client, url, body, calls)
            tapped = round_trips(client, tap_url, body, calls)
    finally:
        process.terminate()
        process.wait(30)
        subprocess.run(["bash", str(script), "stop", str(port)], capture_output=True)
    print(f"llama.cpp non-streamed, direct : {ms(direct)}")
    print(f"llama.cpp non-streamed, tap    : {ms(tapped)}")
    print(f"added per llama.cpp reply      : {(statistics.median(tapped) - statistics.median(direct)) * 1000:.3f} ms")


if __name__ == "__main__":
    sys.exit(main())
