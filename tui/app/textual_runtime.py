"""The controller's runtime inside Textual: its jobs are workers, its timers are Textual timers.

Workers are what the app waits for (tests and shutdown); a job's group is exclusive, so a newer
job of the same kind cancels the older one, as the controller expects (tui/controller/runtime.py).
"""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable

from textual.app import App


class TimerHandle:
    def __init__(self, timer) -> None:
        self.timer = timer

    def cancel(self) -> None:
        self.timer.stop()


class TextualRuntime:
    def __init__(self, app: App) -> None:
        self.app = app

    def spawn(self, job: Callable[[], Awaitable[None]], group: str):
        async def run() -> None:  # the job starts when the worker does (a worker cancelled first never starts it)
            await job()
        return self.app.run_worker(run, group=group, exclusive=True)

    def later(self, delay: float, callback: Callable[[], None]) -> TimerHandle:
        return TimerHandle(self.app.set_timer(delay, callback))

    def soon(self, callback: Callable[..., None], *args: Any) -> None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # a worker thread: the callback runs on the app's loop
            self.app.call_from_thread(callback, *args)
        else:
            callback(*args)
