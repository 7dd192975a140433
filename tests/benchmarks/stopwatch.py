"""Timing an app opening in a benchmark's child process: seconds since the start, and waiting for a condition."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path


class Stopwatch:
    def __init__(self, timeout: float) -> None:
        self.start = time.perf_counter()
        self.timeout = timeout

    def since(self) -> float:
        return time.perf_counter() - self.start

    async def until(self, condition) -> float | None:
        """Seconds since the start when `condition()` first holds; None if it never does within the timeout."""
        while self.since() < self.timeout:
            if condition():
                return self.since()
            await asyncio.sleep(0.002)
        return None


def opened_app(path: Path):
    """The app as `ctxpane FILE` opens it, offline, with its own sessions folder beside the file."""
    from tui.app.app import CtxpaneApp, LaunchOptions
    return CtxpaneApp(LaunchOptions(file=path, flags={"no_scan": True}, offline=True,
                                    sessions_folder=path.parent / "sessions"))
