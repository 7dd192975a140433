"""Waiting for what a test can see happen (a file, a screen's text, a worker's end, a queue's item), with a
deadline: the one polling loop the tests share, never a fixed sleep.

`until` waits in plain code (a thread, a subprocess, a terminal); `eventually` on a running event loop, and with
a Textual `pilot` each poll lets the app handle its messages and draw. Both return the condition's value once it
is true, and fail when the deadline passes with `what` (a text, or a function that gives one, e.g. the screen).
"""

from __future__ import annotations

import asyncio
import subprocess
import time
from typing import Any, Callable

POLL = 0.02  # seconds between two looks


def _said(what: str | Callable[[], Any]) -> str:
    return str(what() if callable(what) else what)


def until(condition: Callable[[], Any], timeout: float = 30.0, what: str | Callable[[], Any] = "the condition",
          poll: float = POLL) -> Any:
    """Wait until `condition()` is true and return its value; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not (value := _look(condition, deadline, timeout, what)):
        time.sleep(poll)
    return value


async def eventually(condition: Callable[[], Any], timeout: float = 30.0,
                     what: str | Callable[[], Any] = "the condition", pilot=None, poll: float = POLL) -> Any:
    """`until` on the event loop: the loop (and with `pilot` the app) runs between two looks."""
    deadline = time.monotonic() + timeout
    while not (value := _look(condition, deadline, timeout, what)):
        if pilot is not None:
            await pilot.pause(poll)
        else:
            await asyncio.sleep(poll)
    return value


def _look(condition: Callable[[], Any], deadline: float, timeout: float, what: str | Callable[[], Any]) -> Any:
    """The condition's value now; past the deadline, a falsy one fails the test."""
    value = condition()
    if not value and time.monotonic() >= deadline:
        raise AssertionError(f"timed out after {timeout:g} s waiting for {_said(what)}")
    return value


def stopped(process: Any, ask: Callable[[], None] | None = None, timeout: float = 10) -> None:
    """A child process ended: asked (`ask`, else SIGTERM) and given `timeout` seconds, then killed; waited for."""
    if process.poll() is not None:
        return
    (ask or process.terminate)()
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
