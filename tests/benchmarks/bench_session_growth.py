"""Sessions that grow with the conversation, not with its square (issue 22): one run, ratios within it.

    .venv/bin/python -m tests.benchmarks.bench_session_growth [--requests 1000] [--tokens 100000] [--part all]

A conversation grows by a tool result and a reply each request, to about --tokens o200k tokens at the last one.
  tap     the real tap (tui.tap.runner.Tap in a process of its own, as `ctxpane tap --no-ui` runs it) between the
          real `openai` SDK (streaming, tool calls) and a fast loopback upstream. Figures: the session file against
          the last request body (goal <= 3x); each append's time, last tenth over first tenth (goal <= 1.3); the
          tap's RSS after the last request over after the 10th (goal <= 1.5); the client's time per request.
  app     the app's own chat through its save path: each request and each reply handed to the app's writer
          (tui.controller.saver.SessionWriter: snapshot on the caller, append on the writer thread), with
          records shaped like the app's (fit, received, cost with running totals). Figures: file against last
          body, append time last tenth over first tenth.
  replay  `ctxpane replay --check` of the app's session, all steps, against the same at a tenth of the requests
          (linear: 10x the time for 10x the requests; the square: 100x).
The open goal (interactive first screen <= 1.2x an empty session's) is bench_open's, run at the same size:
    .venv/bin/python -m tests.benchmarks.bench_open --requests 1000 --tokens 100000
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from tests.benchmarks.corpus import PROSE  # noqa: E402

WORDS_PER_TOKEN = 0.8  # this prose is ~1.25 o200k tokens a word


def words_each(requests: int, tokens: int) -> int:
    return max(1, round(tokens / requests * WORDS_PER_TOKEN * 0.8))  # the rest: the replies and the frames


def prose(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(PROSE) for _ in range(words))


def tenth_ratio(values: list[float]) -> tuple[float, float, float]:
    tenth = max(1, len(values) // 10)
    first, last = sum(values[:tenth]) / tenth, sum(values[-tenth:]) / tenth
    return first, last, last / first if first else float("inf")


def verdict(value: float, goal: float) -> str:
    return "met" if value <= goal else "MISSED"


def rss_of(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


# -- the tap -------------------------------------------------------------------------------------------------
TAP_CHILD = """
import asyncio, json, signal, sys
from pathlib import Path
from tui.tap.runner import Tap
upstream, folder, out = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
async def main():
    def said(kind, tapped):
        if kind == "end":
            print("end", tapped.exchange.number, flush=True)
    tap = Tap(upstream, folder, "127.0.0.1", 0, 64 * 1024 * 1024, said)
    url = await tap.start()
    print("url", url, flush=True)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await stop.wait()
    await tap.close()
    Path(out).write_text(json.dumps([tap.recorder.append_seconds, tap.recorder.append_cpu]))
asyncio.run(main())
"""


def loopback_upstream(reply_words: int):
    """An upstream that streams a tool call (a reply that asks for the next file), as fast as it goes; it notes the
    size of each body it is sent."""
    import asyncio

    from aiohttp import web

    from tap_helpers import LoopThread

    sizes: list[int] = []

    async def chat(request: web.Request) -> web.StreamResponse:
        body = await request.read()
        sizes.append(len(body))
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        number = len(sizes)

        def chunk(delta: dict, finish: str | None = None) -> bytes:
            return ("data: " + json.dumps({"id": f"c{number}", "object": "chat.completion.chunk", "created": 1,
                                           "model": "gpt-4o", "choices": [{"index": 0, "delta": delta,
                                                                           "finish_reason": finish}]}) + "\n\n").encode()
        await response.write(chunk({"role": "assistant", "content": ""}))
        for word in ["Reading"] + ["the next file"] * max(0, reply_words // 3):
            await response.write(chunk({"content": " " + word}))
        await response.write(chunk({"tool_calls": [{"index": 0, "id": f"call{number}", "type": "function",
                                                    "function": {"name": "read_file", "arguments": ""}}]}))
        await response.write(chunk({"tool_calls": [{"index": 0, "function": {"arguments": json.dumps(
            {"path": f"src/file{number}.py"})}}]}))
        await response.write(chunk({}, "tool_calls"))
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response

    async def start() -> int:
        app = web.Application(client_max_size=256 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", chat)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        return site._server.sockets[0].getsockname()[1]  # noqa: SLF001

    loop = LoopThread()
    port = loop.run(start())
    del asyncio
    return loop, f"http://127.0.0.1:{port}/v1", sizes


def bench_tap(requests: int, tokens: int, folder: Path) -> None:
    import openai

    loop, upstream, sizes = loopback_upstream(12)
    timings = folder / "appends.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("OPENAI_BASE_URL", None)
    tap = subprocess.Popen([sys.executable, "-c", TAP_CHILD, upstream, str(folder / "tapped"), str(timings)],
                           stdout=subprocess.PIPE, text=True, cwd=str(ROOT), env=env)
    url = tap.stdout.readline().split()[1]
    ended: list[int] = []
    threading.Thread(target=lambda: [ended.append(int(line.split()[1])) for line in tap.stdout
                                     if line.startswith("end")], daemon=True).start()
    client = openai.OpenAI(base_url=url, api_key="sk-bench-not-a-key-0123456789", max_retries=0)
    rng = random.Random(3)
    words = words_each(requests, tokens)
    history: list[dict] = [{"role": "system", "content": "You are a coding agent. Read the files you need."},
                           {"role": "user", "content": "Find where the cache is invalidated."}]
    tools = [{"type": "function", "function": {"name": "read_file", "description": "Read a file of the repository",
                                               "parameters": {"type": "object", "properties": {
                                                   "path": {"type": "string"}}, "required": ["path"]}}}]
    took: list[float] = []
    rss_at: dict[int, int] = {}
    for number in range(1, requests + 1):
        started = time.perf_counter()
        stream = client.chat.completions.create(model="gpt-4o", messages=history, tools=tools, stream=True)
        content, calls = "", []
        for piece in stream:
            delta = piece.choices[0].delta if piece.choices else None
            if delta is not None and delta.content:
                content += delta.content
            if delta is not None and delta.tool_calls:
                for call in delta.tool_calls:
                    if call.id:
                        calls.append({"id": call.id, "type": "function",
                                      "function": {"name": call.function.name, "arguments": ""}})
                    if call.function and call.function.arguments:
                        calls[-1]["function"]["arguments"] += call.function.arguments
        took.append(time.perf_counter() - started)
        history.append({"role": "assistant", "content": content, "tool_calls": calls})
        history.append({"role": "tool", "tool_call_id": calls[0]["id"], "content": prose(rng, words)})
        if number in (10, requests):
            deadline = time.monotonic() + 300
            while len(ended) < number and time.monotonic() < deadline:  # recorded (its append done)
                time.sleep(0.01)
            time.sleep(1.0)  # (its save's pause over)
            rss_at[number] = rss_of(tap.pid)
    tap.send_signal(signal.SIGTERM)
    tap.wait(300)
    loop.stop()
    appends, cpu = json.loads(timings.read_text())
    (path,) = (folder / "tapped").glob("*.ctxpane.json")
    size, last = path.stat().st_size, sizes[-1]
    first, end, ratio = tenth_ratio(appends)
    cpu_first, cpu_end, cpu_ratio = tenth_ratio(cpu)
    client_first, client_last, client_ratio = tenth_ratio(took)
    rss = rss_at[requests] / rss_at[10]
    print(f"tap: {requests} requests, last body {last / 1e6:.2f} MB (~{tokens:,} tokens)")
    print(f"  session file {size / 1e6:.2f} MB = {size / last:.2f}x the last body (goal <= 3x) -> "
          f"{verdict(size / last, 3)}")
    print(f"  append {first * 1000:.2f} ms (first tenth) -> {end * 1000:.2f} ms (last tenth) = {ratio:.2f}x "
          f"(goal <= 1.3) -> {verdict(ratio, 1.3)}; {len(appends)} appends for {requests} requests")
    print(f"  its processor time {cpu_first * 1000:.2f} ms -> {cpu_end * 1000:.2f} ms = {cpu_ratio:.2f}x (the rest of an "
          "append is the disk's fsync, which the machine's load moves)")
    print(f"  RSS {rss_at[10] / 1e6:.0f} MB after 10 -> {rss_at[requests] / 1e6:.0f} MB after {requests} = "
          f"{rss:.2f}x (goal <= 1.5) -> {verdict(rss, 1.5)}")
    print(f"  the client's request: {client_first * 1000:.1f} ms (first tenth) -> {client_last * 1000:.1f} ms "
          f"(last tenth) = {client_ratio:.2f}x (the tap renders and counts each whole body: it grows with it)")


# -- the app's own chat ---------------------------------------------------------------------------------------
def app_records(requests: int, tokens: int, folder: Path) -> tuple[Path, list[float], int]:
    """The app's session as its chat writes it: a request handed to the writer when sent, its reply when over."""
    from tui.context.messages import Message, Provenance
    from tui.context.request_bytes import request_text
    from tui.controller.saver import SessionWriter, snapshot
    from tui.sessions import store
    from tui.sessions.model import RequestRecord, Session

    appends: list[float] = []
    cpu: list[float] = []
    original = store.SessionAppender.append

    def timed(self, session, path, secrets=None):
        started, used = time.perf_counter(), time.thread_time()
        try:
            return original(self, session, path, secrets)
        finally:
            appends.append(time.perf_counter() - started)
            cpu.append(time.thread_time() - used)
    store.SessionAppender.append = timed
    rng = random.Random(7)
    words = words_each(requests, tokens)
    path = folder / f"app-{requests}.ctxpane.json"
    session = Session(title=f"{requests} requests", tokenizer="o200k_base", model="gpt-4o")
    session.messages.append(Message("system", "You are a careful assistant.",
                                    provenance=Provenance("system_prompt", True), id=session.new_id()))
    writer = SessionWriter()
    totals = {"requests": 0, "input_tokens": 0, "paid": 0.0}
    try:
        for number in range(1, requests + 1):
            session.messages.append(Message("user", prose(rng, words), provenance=Provenance("user", True),
                                            id=session.new_id()))
            wire = [m.to_wire() for m in session.messages]
            body = {"model": "gpt-4o", "messages": wire, "stream": True, "stream_options": {"include_usage": True}}
            sent = round(sum(len(str(m["content"]).split()) for m in wire) / WORDS_PER_TOKEN)
            record = RequestRecord(
                number=number, time="2026-11-02T09:00:00+00:00", body=body, reply={"content": "", "incomplete": True},
                document_hash="%064x" % number, document_tokens=sent, tokens_exact=False, keep_all_tokens=sent,
                predicted_cached=max(0, sent - 2 * words), cache_cause="the previous request's prompt is its prefix",
                template="chatml", tokenizer="o200k_base", message_count=len(session.messages),
                message_ids=[m.id for m in session.messages],
                fit={"fits": True, "prompt_tokens": sent, "max_tokens": 0, "window": {"tokens": 128000,
                     "source": "model", "detail": "gpt-4o"}, "over_by": 0, "reply_room": 128000 - sent,
                     "consequence": "", "message": ""})
            session.requests.append(record)
            writer.save(snapshot(session), path, [])
            writer.wait_idle(60)
            answer = prose(rng, 16)
            usage = {"prompt_tokens": sent, "completion_tokens": 20, "total_tokens": sent + 20,
                     "prompt_tokens_details": {"cached_tokens": max(0, sent - 2 * words)}}
            record.reply = {"content": answer, "incomplete": False, "finish_reason": "stop", "usage": usage,
                            "model": "gpt-4o", "first_token_ms": 180, "elapsed_ms": 900}
            record.usage, record.cached_reported = usage, usage["prompt_tokens_details"]["cached_tokens"]
            totals = {"requests": number, "input_tokens": totals["input_tokens"] + sent,
                      "paid": totals["paid"] + sent * 2.5e-6}
            record.received = {"sent": sent, "exact": False, "received": sent, "source": "usage.prompt_tokens",
                               "verdict": "match", "difference": 0, "notes": [], "affected": [],
                               "summary": "the server counted what was sent"}
            record.cost = {"model": "gpt-4o", "priced": True, "price": {"input": 2.5, "cached_input": 1.25,
                           "cache_write": 0.0, "output": 10.0, "source": "table", "table_date": "2026-01-01",
                           "origin": "builtin"}, "input_tokens": sent, "cached_tokens": record.cached_reported,
                           "cached_from": "reported", "cache_write_tokens": 0, "output_tokens": 20, "lost_tokens": 0,
                           "keep_all_tokens": sent, "paid": sent * 2.5e-6, "saved_by_cache": 0.0,
                           "lost_to_cache_break": 0.0, "keep_all_paid": sent * 2.5e-6,
                           "keep_all_cached_paid": sent * 2.5e-6, "cumulative": totals}
            session.messages.append(Message("assistant", answer, provenance=Provenance("model", True),
                                            id=session.new_id()))
            record.reply_id = session.messages[-1].id
            writer.save(snapshot(session), path, [])
            writer.wait_idle(60)
        writer.close(60)
    finally:
        store.SessionAppender.append = original
    pairs = [appends[i] + appends[i + 1] for i in range(0, len(appends) - 1, 2)]
    used = [cpu[i] + cpu[i + 1] for i in range(0, len(cpu) - 1, 2)]
    return path, (pairs, used), len(request_text(session.requests[-1].body).encode())


def bench_app(requests: int, tokens: int, folder: Path) -> Path:
    path, (appends, cpu), last = app_records(requests, tokens, folder)
    size = path.stat().st_size
    first, end, ratio = tenth_ratio(appends)
    cpu_first, cpu_end, cpu_ratio = tenth_ratio(cpu)
    print(f"app: {requests} requests, last body {last / 1e6:.2f} MB")
    print(f"  session file {size / 1e6:.2f} MB = {size / last:.2f}x the last body (goal <= 3x) -> "
          f"{verdict(size / last, 3)}")
    print(f"  save (request + reply) {first * 1000:.2f} ms (first tenth) -> {end * 1000:.2f} ms (last tenth) = "
          f"{ratio:.2f}x (goal <= 1.3) -> {verdict(ratio, 1.3)}")
    print(f"  its processor time {cpu_first * 1000:.2f} ms -> {cpu_end * 1000:.2f} ms = {cpu_ratio:.2f}x (the rest is "
          "the disk's fsync, which the machine's load moves)")
    return path


def bench_replay(requests: int, tokens: int, folder: Path, path: Path | None) -> None:
    if path is None:
        path = app_records(requests, tokens, folder)[0]
    small = app_records(max(1, requests // 10), tokens // 10, folder)[0]

    def check(target: Path) -> float:
        started = time.perf_counter()
        result = subprocess.run([sys.executable, "-m", "tui", "replay", "--check", str(target)], capture_output=True,
                                text=True, cwd=str(ROOT), timeout=3600)
        if result.returncode not in (0, 1):  # (1: the figures made up here are not the engine's: it says so, per step)
            raise SystemExit(f"replay --check failed:\n{result.stdout[-2000:]}{result.stderr[-2000:]}")
        return time.perf_counter() - started
    few, many = check(small), check(path)
    print(f"replay --check: {max(1, requests // 10)} requests ({tokens // 10:,} tokens) {few:.1f} s, {requests} "
          f"requests ({tokens:,} tokens) {many:.1f} s = {many / few:.1f}x for 10x the requests and tokens "
          f"(linear 10x, the square 100x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--tokens", type=int, default=100_000)
    parser.add_argument("--part", choices=("all", "tap", "app", "replay"), default="all")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="ctxpane-bench-growth-"))
    for name in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"):
        os.environ[name] = str(folder / name.lower())
    print(f"load: {' '.join(f'{x:.2f}' for x in os.getloadavg())} (1, 5, 15 min); files in {folder}")
    path = None
    if args.part in ("all", "tap"):
        bench_tap(args.requests, args.tokens, folder)
    if args.part in ("all", "app"):
        path = bench_app(args.requests, args.tokens, folder)
    if args.part in ("all", "replay"):
        bench_replay(args.requests, args.tokens, folder, path)


if __name__ == "__main__":
    main()
