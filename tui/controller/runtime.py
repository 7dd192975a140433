"""How the controller runs its jobs and timers: given by its host, so it needs no UI toolkit.

The app gives a runtime made of Textual workers and timers (tui/app/textual_runtime.py); tests and scripts
use AsyncioRuntime below. Every callback runs on the event loop's thread.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Callable, Coroutine, Protocol


class Handle(Protocol):
    def cancel(self) -> object: ...  # a task says whether it was cancelled, a timer says nothing


class Runtime(Protocol):
    def spawn(self, job: Callable[[], Coroutine[Any, Any, None]], group: str) -> Handle:
        """Run `job()` on the loop; a job already running in the same group is cancelled first."""

    def later(self, delay: float, callback: Callable[[], None]) -> Handle:
        """Call `callback()` on the loop after `delay` seconds, unless cancelled."""

    def soon(self, callback: Callable[..., None], *args: Any) -> None:
        """Call `callback(*args)` on the loop, from any thread (at once when already on it)."""


class AsyncioRuntime:
    """The controller on a plain asyncio loop: jobs are tasks, timers are loop timers."""

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.loop = loop or asyncio.get_running_loop()
        self.thread = threading.current_thread()
        self.tasks: dict[str, asyncio.Task[None]] = {}

    def spawn(self, job: Callable[[], Coroutine[Any, Any, None]], group: str) -> asyncio.Task[None]:
        running = self.tasks.get(group)
        if running is not None and not running.done():
            running.cancel()
        task = self.tasks[group] = self.loop.create_task(job())
        return task

    def later(self, delay: float, callback: Callable[[], None]) -> asyncio.TimerHandle:
        return self.loop.call_later(delay, callback)

    def soon(self, callback: Callable[..., None], *args: Any) -> None:
        if threading.current_thread() is self.thread:
            callback(*args)
        else:
            self.loop.call_soon_threadsafe(callback, *args)

    async def idle(self, settle: float = 0.0) -> None:
        """Wait until no job is running (and, with `settle`, until timers due within it have fired)."""
        while True:
            if settle:
                await asyncio.sleep(settle)
            pending = [task for task in self.tasks.values() if not task.done()]
            if not pending:
                return
            await asyncio.gather(*pending, return_exceptions=True)
