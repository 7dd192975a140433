"""The plain-asyncio runtime's idle(): what tests wait on instead of a fixed time, so it must wait for exactly what
a change started — its jobs, the timers due soon, the callbacks a thread handed over — and no more."""

from __future__ import annotations

import asyncio
import threading

import pytest

from tui.controller.runtime import IDLE_HORIZON, AsyncioRuntime


async def test_idle_waits_for_a_job_and_the_timer_it_sets():
    runtime = AsyncioRuntime()
    fired: list[str] = []

    async def job() -> None:
        await asyncio.sleep(0.05)
        runtime.later(0.2, lambda: fired.append("settled"))

    runtime.spawn(job, "work")
    await runtime.idle()
    assert fired == ["settled"]
    assert runtime.busy() is None


async def test_idle_does_not_wait_for_a_timer_past_its_horizon_nor_for_a_cancelled_one():
    runtime = AsyncioRuntime()
    fired: list[str] = []
    runtime.later(IDLE_HORIZON + 30, lambda: fired.append("retry"))
    runtime.later(0.1, lambda: fired.append("cancelled")).cancel()
    await asyncio.wait_for(runtime.idle(), 5)
    assert fired == []
    assert runtime.busy() is None
    assert runtime.busy(horizon=IDLE_HORIZON + 60) is not None  # the retry is still there, only not waited for


async def test_idle_waits_for_a_callback_another_thread_handed_over():
    runtime = AsyncioRuntime()
    ran: list[str] = []
    handed = threading.Event()

    def worker() -> None:
        runtime.soon(ran.append, "from the thread")
        handed.set()

    thread = threading.Thread(target=worker)
    thread.start()
    await asyncio.to_thread(handed.wait, 5)
    await runtime.idle()
    thread.join()
    assert ran == ["from the thread"]


async def test_a_runtime_that_never_settles_fails_with_what_keeps_it_busy():
    runtime = AsyncioRuntime()

    def again() -> None:
        runtime.later(0.01, again)  # a timer that sets itself again forever

    again()
    with pytest.raises(TimeoutError, match="1 timers"):
        await runtime.idle(deadline=0.3)


async def test_a_failed_job_does_not_stop_idle_and_leaves_no_unretrieved_exception():
    runtime = AsyncioRuntime()

    async def fails() -> None:
        raise RuntimeError("boom")

    task = runtime.spawn(fails, "work")
    await runtime.idle()
    assert task.done() and isinstance(task.exception(), RuntimeError)
