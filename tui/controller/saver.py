"""Saving without waiting: the event loop hands a snapshot of the session to one writer thread.

The loop only copies the lists and the records that may still change (a few microseconds); finding what changed
since the last write, turning it into lines, redacting keys, appending and the fsync all happen in the writer,
which appends only what is new (tui/sessions/log_writer.py): no save rewrites or copies the whole session. Saves of the same file
coalesce: while one write runs, only the newest waiting snapshot is kept, so the file always ends
with the last state handed over, in order (one thread, so an older state never lands after a newer
one). On quit the app waits for the writer a bounded time and says so when the file could not be
written (see `SessionWriter.close`). The thread is not a daemon, so a write under way lands before the
process ends; it ends after IDLE_SECONDS with nothing to write, so a writer nobody closed (a test that
failed half-way) never keeps the process alive.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, TypeVar

from tui.sessions import store
from tui.sessions.model import Session

FLUSH_SECONDS = 10.0  # how long quitting waits for the last write
IDLE_SECONDS = 1.0  # the writer thread ends after this long with nothing to write (the next save starts another)

T = TypeVar("T")


RECENT = 3  # the last requests, copied at each snapshot: a reply may still be changing them


def snapshot(session: Session) -> Session:
    """A copy the loop may go on changing: every object an action mutates in place is copied.

    Messages are replaced, never changed in place (workbench.py), so the lists are copied and the messages
    shared; a streaming reply changes its RequestRecord's fields, so the records a reply may still change (the
    last few, and any whose reply is incomplete) are copied; the values inside (texts, bodies, replies) are
    replaced, never changed in place, so they are shared. The cost grows with the lists' lengths only as a
    list copy does (no Python loop over the conversation but the check for an incomplete reply).
    """
    def shallow(item: T) -> T:
        copy: T = object.__new__(type(item))
        copy.__dict__.update(item.__dict__)
        return copy
    copy = shallow(session)
    copy.messages = list(session.messages)
    copy.requests = list(session.requests)
    recent = max(0, len(copy.requests) - RECENT)
    for index, record in enumerate(copy.requests):
        if index >= recent or record.reply.get("incomplete"):
            copy.requests[index] = shallow(record)
    copy.branches = list(session.branches)  # (each Branch is frozen: the list is what changes)
    copy.policy, copy.variables, copy.params = dict(session.policy), dict(session.variables), dict(session.params)
    copy.template = dict(session.template)
    return copy


@dataclass
class SaveFailure:
    path: Path
    reason: str

    def __str__(self) -> str:
        return f"could not save the session to {self.path}: {self.reason}"


class SessionWriter:
    """The single thread that writes session files, fed without blocking."""

    def __init__(self, on_error: Callable[[SaveFailure], None] | None = None) -> None:
        self._pending: dict[Path, tuple[Session, list[str]]] = {}  # oldest first; one (the newest) per file
        self._after: list[Callable[[], None]] = []  # run once every write handed over before it has landed
        self._cond = threading.Condition()
        self._busy = False
        self._closed = False
        self._thread: threading.Thread | None = None  # the latest writer thread
        self._running = False  # a writer thread is taking work (set and cleared under the lock)
        self.on_error = on_error
        self.failure: SaveFailure | None = None  # the last write that failed, until a later one succeeds
        self.written = 0
        self.appender = store.SessionAppender()  # what each file holds already: only what is new is appended
        self.on_converted: Callable[[Path, Path], None] | None = None  # a version-1 file converted, its backup

    # -- from the event loop: none of these wait ---------------------------------------------------------
    def save(self, session: Session, path: Path, secrets: list[str]) -> None:
        """Queue `session` (a snapshot the caller will not change) to be written to `path`."""
        with self._cond:
            if self._closed:  # after quitting (nothing should change then): written here, not lost
                self.appender.append(session, path, secrets)
                return
            self._pending.pop(path, None)  # a newer state of this file replaces the waiting one
            self._pending[path] = (session, list(secrets))
            if not self._running:  # none, or it ended idle: a writer never left open holds the process only
                self._running = True  # while it has something to write
                self._thread = threading.Thread(target=self._run, name="ctxpane-save", daemon=False)
                self._thread.start()
            self._cond.notify_all()

    def after_pending(self, action: Callable[[], None]) -> None:
        """Run `action` in the writer once what is queued now has been written (releasing a lock)."""
        with self._cond:
            if not self._pending and not self._busy:
                action()
                return
            self._after.append(action)
            self._cond.notify_all()

    @property
    def idle(self) -> bool:
        with self._cond:
            return not self._pending and not self._busy

    # -- waiting: for quitting and for tests, never on the loop --------------------------------------------
    def wait_idle(self, timeout: float) -> bool:
        """Wait until everything handed over has been written; False when `timeout` ran out first."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._pending or self._busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def close(self, timeout: float = FLUSH_SECONDS) -> SaveFailure | None:
        """Write what is waiting (at most `timeout` seconds), then stop. None when all landed.

        On a timeout the thread is left to finish the write (it is not a daemon: the process ends
        after it), and the failure says the file may not hold the last state.
        """
        landed = self.wait_idle(timeout)
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            waiting = [path for path in self._pending]
        if not landed:
            busy = waiting[0] if waiting else None
            return SaveFailure(busy or Path("the session file"),
                               f"the disk did not answer within {timeout:.0f} s: the file may not hold the last "
                               "changes yet (ctxpane finishes the write before it ends)")
        return self.failure

    # -- the writer thread -----------------------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            job = self._next_job()
            if job is None:
                return
            self._write(*job)
            with self._cond:
                self._busy = False
                after = self._after if not self._pending else []
                if after:
                    self._after = []
                self._cond.notify_all()
            for action in after:
                try:
                    action()
                except Exception:  # noqa: BLE001 - a lock already released
                    pass

    def _next_job(self) -> tuple[Path, Session, list[str]] | None:
        """The oldest waiting write, marked busy; None, and the thread is done, when there is none for a while."""
        with self._cond:
            if not self._pending and not self._closed:
                self._cond.wait(IDLE_SECONDS)
            if not self._pending:  # closed, or idle: a later save starts a new thread
                self._running = False
                return None
            path = next(iter(self._pending))
            session, secrets = self._pending.pop(path)
            self._busy = True
            return path, session, secrets

    def _write(self, path: Path, session: Session, secrets: list[str]) -> None:
        try:
            self.appender.append(session, path, secrets)
            while self.appender.converted:
                converted, backup = self.appender.converted.pop(0)
                if self.on_converted is not None:
                    try:
                        self.on_converted(converted, backup)
                    except Exception:  # noqa: BLE001 - an app already gone cannot be told
                        pass
        except Exception as exc:  # noqa: BLE001 - reported to the app; the writer lives on
            failure = SaveFailure(path, getattr(exc, "strerror", None) or str(exc) or type(exc).__name__)
            with self._cond:
                self.failure = failure
            if self.on_error is not None:
                try:
                    self.on_error(failure)
                except Exception:  # noqa: BLE001 - an app already gone cannot be told
                    pass
        else:
            with self._cond:
                self.written += 1
                if self.failure is not None and self.failure.path == path:
                    self.failure = None
