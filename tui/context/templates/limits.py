"""Run untrusted template code with limits: a deadline, a memory ceiling and size budgets.

Design: a render runs in the caller's thread while one shared watchdog thread watches it, and on expiry
raises `Interrupted` into that thread (PyThreadState_SetAsyncExc). CPython checks for such exceptions
between bytecodes, so even a loop that calls nothing stops, with no process or thread started per render
(renders run on every keystroke). A watch fires at most once and only while armed; disarming takes the
same lock and clears a pending exception, so nothing can land after the guarded call has returned. A watch
that fired is fired again every REFIRE_SECONDS while still armed: an interrupt that lands in a finalizer the
garbage collector runs in that thread is reported and dropped by Python, and the render would run on.
A single C operation (`'ab' * 10**9`, `center(10**10)`) cannot be interrupted that way, so the sandbox
(template_sandbox.py) checks sizes before computing them, against the `Budget` of the current render.
"""

from __future__ import annotations

import ctypes
import math
import os
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, TypeVar

from tui.context.errors import TemplateLimitError

T = TypeVar("T")
POLL_SECONDS = 0.02  # how often the watchdog samples the process's memory while a render runs
LINGER_SECONDS = 1.0  # renders come in bursts (keystrokes): between them the watchdog keeps its pace
REFIRE_SECONDS = 0.1  # a fired watch still armed after this long is fired again (its interrupt was dropped)


@dataclass(frozen=True)
class RenderLimits:
    """What one render of an untrusted template may use; every real chat template stays far inside."""

    seconds: float = 2.0  # wall time, compiling included
    max_memory: int = 1 << 30  # bytes the process may grow by during the render (0: not watched)
    max_chars: int = 64_000_000  # any string the template builds, and its whole output
    max_items: int = 10_000_000  # any list, tuple or dict the template builds
    max_range: int = 100_000  # numbers in one range() (the bound of Jinja's own sandbox)
    max_range_total: int = 10_000_000  # numbers over all range() calls of one render
    max_depth: int = 100  # macro, caller() and recursive-loop calls nested in each other
    max_int_bits: int = 100_000  # integers built with * and **
    max_source: int = 1_000_000  # characters of template text


DEFAULT_LIMITS = RenderLimits()


class Floor:
    """A size no render's limits have been below: a string or list this small needs no lookup of the
    current render's Budget, so the common `'<|im_start|>' + role` stays cheap. 100,000 at most,
    the bound on constants folded while compiling."""

    size = 100_000

    @classmethod
    def lower(cls, limits: RenderLimits) -> None:
        cls.size = min(cls.size, limits.max_chars, limits.max_items)


class Interrupted(BaseException):
    """Raised into a rendering thread by the watchdog.

    A BaseException, so that `except Exception` in library code (Jinja's included) lets it through.
    """


class Watch:
    __slots__ = ("thread_id", "deadline", "max_memory", "baseline", "reason", "fired_at")

    def __init__(self, seconds: float, max_memory: int):
        self.thread_id = threading.get_ident()
        self.deadline = time.monotonic() + seconds
        self.max_memory = max_memory
        self.baseline: int | None = None  # the process's memory at the watchdog's first look
        self.reason: str | None = None  # "time" or "memory" once fired
        self.fired_at = math.inf  # when the interrupt was last raised into its thread

    def next_look(self, now: float) -> float:
        if self.reason is not None:
            return self.fired_at + REFIRE_SECONDS
        return min(self.deadline, now + POLL_SECONDS) if self.max_memory else self.deadline


def _set_async_exc(exception: Any) -> Callable[[int, Any], int]:
    argument = ctypes.py_object if exception else ctypes.c_void_p  # c_void_p(None) is NULL: clears
    prototype = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_ulong, argument)
    return prototype(("PyThreadState_SetAsyncExc", ctypes.pythonapi))


_raise_in_thread = _set_async_exc(True)
_clear_in_thread = _set_async_exc(False)


def process_memory() -> int:
    """Resident memory of this process in bytes (Linux); elsewhere its peak, which also only grows."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        try:
            import resource
        except ImportError:
            return 0
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024


class Watchdog:
    """One daemon thread for every render; it sleeps while nothing is armed."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._watches: set[Watch] = set()
        self._next_look = math.inf
        self._last_arm = -math.inf
        self._thread: threading.Thread | None = None

    def arm(self, seconds: float, max_memory: int) -> Watch:
        watch = Watch(seconds, max_memory)
        with self._lock:
            self._watches.add(watch)
            self._last_arm = time.monotonic()
            if self._thread is None or not self._thread.is_alive():  # first use, or after a fork
                self._thread = threading.Thread(target=self._run, name="template-watchdog", daemon=True)
                self._thread.start()
            if watch.next_look(time.monotonic()) < self._next_look:
                self._changed.notify()
        return watch

    def disarm(self, watch: Watch) -> None:
        with self._lock:
            self._watches.discard(watch)
            if watch.reason is not None:
                _clear_in_thread(watch.thread_id, None)  # fired but maybe not delivered yet

    def _run(self) -> None:
        with self._lock:
            while True:
                now = time.monotonic()
                live = [watch for watch in self._watches if watch.reason is None]
                memory = process_memory() if any(watch.max_memory for watch in live) else 0
                for watch in live:
                    try:
                        self._look(watch, now, memory)
                    except Exception:  # noqa: BLE001 - the watchdog must outlive any one watch
                        watch.reason = watch.reason or "time"
                for watch in self._watches:
                    if watch.reason is not None and now >= watch.next_look(now):  # still armed: it was dropped
                        self._fire(watch, now)
                self._next_look = min((w.next_look(now) for w in self._watches), default=math.inf)
                if self._next_look == math.inf and now - self._last_arm < LINGER_SECONDS:
                    self._next_look = now + POLL_SECONDS  # so the next arm need not wake this thread
                self._changed.wait(None if self._next_look == math.inf else max(0.0, self._next_look - now))

    @staticmethod
    def _look(watch: Watch, now: float, memory: int) -> None:
        if watch.max_memory and watch.baseline is None:
            watch.baseline = memory
        if now >= watch.deadline:
            watch.reason = "time"
        elif watch.max_memory and watch.baseline is not None and memory - watch.baseline > watch.max_memory:
            watch.reason = "memory"
        if watch.reason is not None:
            Watchdog._fire(watch, now)

    @staticmethod
    def _fire(watch: Watch, now: float) -> None:
        watch.fired_at = now
        _raise_in_thread(watch.thread_id, Interrupted)


WATCHDOG = Watchdog()


class Budget:
    """What the render running in this thread may still use; the sandbox's hooks consult it."""

    __slots__ = ("limits", "range_left", "depth", "watch", "compiling")

    def __init__(self, limits: RenderLimits):
        self.limits = limits
        self.range_left = limits.max_range_total
        self.depth = 0
        self.watch: Watch | None = None
        self.compiling = False

    def check_time(self) -> None:
        """The synchronous twin of the watchdog's interrupt, for hooks that run after it fired."""
        if self.watch is not None and self.watch.reason is not None:
            raise Interrupted

    def check_chars(self, size: int) -> None:
        # Constants folded while compiling end up in generated source: keep them small.
        limit = min(self.limits.max_chars, 100_000) if self.compiling else self.limits.max_chars
        if size > limit:
            raise TemplateLimitError("SizeLimit", f"the template built a string of more than {limit:,} characters")

    def check_items(self, size: int) -> None:
        if size > self.limits.max_items:
            raise TemplateLimitError("SizeLimit",
                                     f"the template built a list of more than {self.limits.max_items:,} items")

    def check_bits(self, bits: int) -> None:
        if bits > self.limits.max_int_bits:
            raise TemplateLimitError("SizeLimit",
                                     f"the template built an integer of more than {self.limits.max_int_bits:,} bits")

    def checked(self, value: T) -> T:
        """`value` itself, if its size is within the limits."""
        item: object = value  # (exact types: narrowed by type(), which a TypeVar is not)
        if type(item) is str or type(item) is bytes:
            self.check_chars(len(item))
        elif type(item) is list or type(item) is tuple or type(item) is dict:
            self.check_items(len(item))
        return value


_local = threading.local()
_OUTSIDE = Budget(DEFAULT_LIMITS)  # for a template compiled outside any render


def current() -> Budget:
    return getattr(_local, "budget", None) or _OUTSIDE


def run_limited(limits: RenderLimits, work: Callable[[], T]) -> T:
    """Run `work()` in this thread under `limits`.

    Every limit reached, MemoryError and RecursionError included, raises TemplateLimitError
    (kind TimeLimit, MemoryLimit, SizeLimit or RecursionLimit); this thread stays usable.
    """
    if getattr(_local, "budget", None) is not None:  # already inside a render: one watch per thread
        return work()
    Floor.lower(limits)
    budget = _local.budget = Budget(limits)
    try:
        watch = budget.watch = WATCHDOG.arm(limits.seconds, limits.max_memory)
        try:
            try:
                return work()
            finally:
                WATCHDOG.disarm(watch)
        except Interrupted:
            WATCHDOG.disarm(watch)  # the interrupt may have landed inside the first disarm: finish it
            failure = interrupted_failure(watch, limits)
        except MemoryError:
            failure = ("MemoryLimit", "the template ran out of memory")
        except RecursionError:
            failure = ("RecursionLimit", "the template nested calls deeper than Python allows")
    finally:
        _local.budget = None
    # Raised outside the except blocks, so the error does not keep the render's frames (and data) alive.
    raise TemplateLimitError(*failure)


def interrupted_failure(watch: Watch, limits: RenderLimits) -> tuple[str, str]:
    if watch.reason == "memory":
        return "MemoryLimit", f"the template used more than {limits.max_memory // (1 << 20):,} MB of memory"
    return "TimeLimit", f"the template ran for more than {limits.seconds:g} s"
