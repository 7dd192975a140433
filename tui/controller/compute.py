"""The one worker where the conversation is computed (rendered, fenced, counted), away from the event loop.

Jobs run one at a time, in the order they were asked for. A job whose result nobody wants any more
(the state changed after it was asked for) is skipped when its turn comes, so a burst of changes
costs one computation, not one per change.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, TypeVar

T = TypeVar("T")


class Skipped:
    """What `run` returns for a job that was no longer wanted when its turn came."""

    def __repr__(self) -> str:
        return "SKIPPED"


SKIPPED = Skipped()


class ComputeWorker:
    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ctxpane-compute")
        self.runs = 0  # jobs that ran (what a test counts)
        self.skipped = 0
        self.closed = False

    async def run(self, job: Callable[[], T], wanted: Callable[[], bool] = lambda: True) -> T | Skipped:
        """`job()` in the worker's thread; SKIPPED, without running it, if `wanted()` is false by then."""
        def guarded() -> T | Skipped:
            if not wanted():
                self.skipped += 1
                return SKIPPED
            self.runs += 1
            return job()
        if self.closed:  # the app is closing: nothing more is computed
            return SKIPPED
        return await asyncio.wrap_future(self._pool.submit(guarded))

    def close(self) -> None:
        self.closed = True
        self._pool.shutdown(wait=False, cancel_futures=True)
