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


IDLE_HORIZON = 1.0  # seconds: timers due sooner are part of what a change does


class AsyncioRuntime:
    """The controller on a plain asyncio loop: jobs are tasks, timers are loop timers."""

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.loop = loop or asyncio.get_running_loop()
        self.thread = threading.current_thread()
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self.timers: set[asyncio.TimerHandle] = set()  # timers not yet fired, so idle() can wait for them
        self._lock = threading.Lock()
        self._queued = 0  # callbacks another thread has handed the loop and it has not run yet

    def spawn(self, job: Callable[[], Coroutine[Any, Any, None]], group: str) -> asyncio.Task[None]:
        running = self.tasks.get(group)
        if running is not None and not running.done():
            running.cancel()
        task = self.tasks[group] = self.loop.create_task(job())
        return task

    def later(self, delay: float, callback: Callable[[], None]) -> asyncio.TimerHandle:
        def fire() -> None:
            self.timers.discard(handle)
            callback()
        handle = self.loop.call_later(delay, fire)
        self.timers = {timer for timer in self.timers if not timer.cancelled()}
        self.timers.add(handle)
        return handle

    def soon(self, callback: Callable[..., None], *args: Any) -> None:
        if threading.current_thread() is self.thread:
            callback(*args)
            return
        with self._lock:
            self._queued += 1

        def run() -> None:
            with self._lock:
                self._queued -= 1
            callback(*args)
        self.loop.call_soon_threadsafe(run)

    def busy(self, horizon: float = IDLE_HORIZON) -> str | None:
        """What keeps the loop busy: jobs running, callbacks handed over from a thread, timers due within
        `horizon` seconds (a draft's settle, a save; a retry seconds away is not counted); None when idle."""
        jobs = sum(not task.done() for task in self.tasks.values())
        due = sum(not t.cancelled() and t.when() <= self.loop.time() + horizon for t in self.timers)
        if not (jobs or due or self._queued):
            return None
        return f"{jobs} jobs, {due} timers, {self._queued} callbacks"

    async def idle(self, horizon: float = IDLE_HORIZON, deadline: float = 60.0) -> None:
        """Wait until busy() says nothing; past `deadline` seconds, TimeoutError."""
        give_up = self.loop.time() + deadline
        while True:
            await asyncio.sleep(0)  # what was just scheduled runs first
            doing = self.busy(horizon)
            if doing is None:
                return
            left = give_up - self.loop.time()
            if left <= 0:
                raise TimeoutError(f"the runtime was still busy after {deadline:g}s: {doing}")
            pending = [task for task in self.tasks.values() if not task.done()]
            due = [t.when() for t in self.timers if not t.cancelled() and t.when() <= self.loop.time() + horizon]
            if pending:
                done, _ = await asyncio.wait(pending, timeout=left)
                for task in done:  # a job's failure is its own to report: taken here so asyncio does not warn
                    if not task.cancelled():
                        task.exception()
            elif due:
                await asyncio.sleep(max(0.0, min(due) - self.loop.time()))
            else:
                await asyncio.sleep(0.001)  # a callback handed over from a thread: the loop runs it next
