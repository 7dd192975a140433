"""What a Responses conversation chained with previous_response_id costs the tap to record, against the same
conversation sent whole each time. The server holds a chained request's earlier context; the tap rebuilds it from
what it recorded. Goal (issue 39): 150 chained requests record within 2x the time of the same conversation unchained
(before, each chained request read every earlier request of its chain again: 513 s against 3 s).

    .venv/bin/python -m tests.benchmarks.bench_tap_chain [--requests 150]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import openai

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from tap_helpers import ResponsesUpstream, RunningTap  # noqa: E402


def record(requests: int, chained: bool) -> float:
    """Seconds from the first request to the last one recorded."""
    upstream = ResponsesUpstream()
    with tempfile.TemporaryDirectory() as folder:
        tap = RunningTap(upstream.url, Path(folder))
        try:
            sdk = openai.OpenAI(base_url=tap.url, api_key="sk-bench-key-0123456789abcdef", max_retries=0, timeout=60)
            history: list[dict] = []
            previous = None
            started = time.perf_counter()
            for number in range(1, requests + 1):
                question = {"role": "user", "content": f"Question {number}: " + "words of the question " * 20}
                if chained:
                    answer = sdk.responses.create(model="gpt-5", input=[question], previous_response_id=previous)
                    previous = answer.id
                else:
                    history.append(question)
                    answer = sdk.responses.create(model="gpt-5", input=list(history))
                    history.append({"role": "assistant", "content": answer.output_text})
            tap.settle(timeout=900)
            took = time.perf_counter() - started
            recorded = sum(len(thread.session.requests) for thread in tap.recorder.threads.values())
            assert recorded == requests, f"{recorded} of {requests} recorded"
            return took
        finally:
            tap.stop()
            upstream.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=150)
    args = parser.parse_args()
    load = os.getloadavg()[0]
    unchained = record(args.requests, chained=False)
    chained = record(args.requests, chained=True)
    print(f"{args.requests} requests: unchained {unchained:.1f} s, chained {chained:.1f} s, "
          f"ratio {chained / unchained:.2f} (goal <= 2.0); load average {load:.2f}")


if __name__ == "__main__":
    main()
