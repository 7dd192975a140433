"""Where the open session is kept: its file, the lock on it, read-only or not, and saving as you go.

Saving never waits for the disk: a snapshot of the session is handed to one writer thread
(saver.py), which writes the newest state of each file in order. Quitting hands over the last
state and waits a bounded time; what could not be written is kept in `save_failure`, for the app
to say once the terminal is back.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable

from tui.client.keys import key_named
from tui.context.untrusted.visible import visible
from tui.sessions.model import Session
from tui.sessions.store import SessionLock, SessionLocked, followed_link, session_path

from tui.controller.runtime import Handle, Runtime
from tui.controller.saver import FLUSH_SECONDS, SaveFailure, SessionWriter, snapshot
from tui.controller.events import CONTINUE_KEY, Notify, Severity

if TYPE_CHECKING:
    from tui.client.http import OpenAIClient

SAVE_DELAY = 0.3  # seconds: changes within this are written once
CONTINUE_HINT = f"{CONTINUE_KEY} (Continue in a new session) keeps the whole history in a file of its own"


class SessionFile:
    def __init__(self, current: Callable[[], Session], runtime: Runtime, notify: Notify,
                 client: Callable[[], OpenAIClient | None], api_key_env: str, folder: Path | None = None) -> None:
        self._current, self.runtime, self.notify, self._client = current, runtime, notify, client
        self.api_key_env, self.folder = api_key_env, folder
        self.session_file: Path | None = None
        self.lock: SessionLock | None = None
        self.read_only = False
        self.held_by = ""  # the pid of the ctxpane whose lock made this one read-only ("" for any other reason)
        self.read_only_note = ""  # why the file is read-only (a newer format's note), when no lock is the reason
        self.unsaved_here = False  # read-only, and changed here all the same: kept in memory alone (a fork keeps it)
        self.writer: SessionWriter | None = None  # made at the first save
        self.unsaved = False  # changed since the last snapshot was handed to the writer
        self.draft_unsaved = False  # the composer's text changed since then (written at quit, or with a change)
        self.save_failure: str | None = None  # what quitting could not save
        self._save_timer: Handle | None = None
        self._closing = False

    @property
    def session(self) -> Session:
        return self._current()

    def open(self, path: Path | None, read_only: bool) -> None:
        """This file (or none yet) holds the session from now on; the lock on the previous one is let go."""
        # (asked for read-only: a file written by a newer ctxpane, the one reason today)
        self.read_only, self.held_by = read_only, ""
        self.read_only_note = "the file was written by a newer ctxpane" if read_only else ""
        self.unsaved_here = False
        self._let_go()
        path = followed_link(path)
        if path is not None and not self.read_only:
            self._lock_or_read_only(path, SessionLock(path))
        self.session_file = path
        self.draft_unsaved = False  # (the draft it is opened with is the one its file holds)

    def draft_typed(self) -> None:
        """The composer's text changed: not saved for that alone (a write per key), but before the app ends."""
        self.draft_unsaved = True

    def _lock_or_read_only(self, path: Path, lock: SessionLock) -> bool:
        """One writer per file: the lock taken (True), or this app reads only and says who holds the file."""
        try:
            lock.acquire()
            self.lock = lock
            self._read_again(path)
            return True
        except SessionLocked as exc:
            self.read_only, self.held_by, self.read_only_note = True, exc.holder, visible(str(exc))
            self.notify(visible(str(exc)) + " — opened read-only: " + CONTINUE_HINT, severity=Severity.WARNING,
                        timeout=15)
            return False

    def _read_again(self, path: Path) -> None:
        """The file was let go before (another session was opened): what the writer remembers of it may be stale,
        since another app may have written it meanwhile (a rename). Its next save reads the file first."""
        writer = self.writer
        if writer is not None:
            writer.after_pending(lambda: writer.appender.forget(path))

    def changed_unsaved(self) -> None:
        """The session this app reads only was changed here (an edit, a setting): said once, as it is not saved."""
        if not self.unsaved_here:
            self.notify(f"not saved: {self.read_only_line()}; this change lasts until you quit. {CONTINUE_HINT}",
                        severity=Severity.WARNING, timeout=15)
        self.unsaved_here = True

    def read_only_line(self) -> str:
        """Why nothing is written here, in one line (the notices' and the quit line's words)."""
        if self.held_by:
            return f"read-only: the session is held by another ctxpane (pid {self.held_by})"
        return f"read-only: {self.read_only_note or 'opened read-only'}"

    def closing_line(self) -> str:
        """What the user is told once the app has quit: the truth about the file ("" when there is nothing to say).
        A writer names its file only when it holds it and the last state landed there."""
        if self.read_only and self.held_by:  # (the holder may have quit since: said of when it was opened)
            return (f"read-only: nothing saved; the session was held by another ctxpane (pid {self.held_by}) when "
                    "it was opened here")
        if self.read_only:
            return f"{self.read_only_line()}: nothing saved" if self.session_file is not None else ""
        if self.session_file is None or self.lock is None or self.save_failure is not None \
                or not self.session_file.is_file():
            return ""
        return f"session saved in {self.session_file}"

    def _let_go(self) -> None:
        """Release the lock on the file, once what was handed to the writer for it has landed."""
        if self.lock is None:
            return
        if self.writer is not None:
            self.writer.after_pending(self.lock.release)
        else:
            self.lock.release()
        self.lock = None

    def autosave(self, now: bool = False) -> None:
        """Save soon (changes within SAVE_DELAY are written once), or now; never waits for the disk."""
        if self.read_only or not (self.session.messages or self.session.draft):  # a draft alone is kept too
            return
        if self.session_file is None:
            self.session_file = session_path(self.session, self.folder)
            if not self._lock_or_read_only(self.session_file, SessionLock(self.session_file)):
                return  # never written without its lock, even a file named after a new session's id
        self.unsaved = True
        if now:
            self.save()
        elif self._save_timer is None:
            self._save_timer = self.runtime.later(SAVE_DELAY, self.save)

    def _secrets(self) -> list[str]:
        """What no file may hold: the key in use, and the key in the environment even when it was not sent."""
        client = self._client()
        found = list(client.endpoint.secrets) if client else []
        key = key_named(self.api_key_env) or ""
        if key and key not in found:  # (the redactor searches texts only for a key that looks like one)
            found.append(key)
        return found

    def save(self) -> None:
        """Hand a snapshot of the session to the writer thread; the event loop does not wait for it."""
        if self._save_timer is not None:
            self._save_timer.cancel()
            self._save_timer = None
        if self.session_file is None or self.read_only:
            return
        self.unsaved = self.draft_unsaved = False
        self._writer().save(snapshot(self.session), self.session_file, self._secrets())

    def save_to(self, session: Session, path: Path) -> None:
        """A session no longer open (its reply ended after another was opened): its state to its own file."""
        self._writer().save(snapshot(session), path, self._secrets())

    def _writer(self) -> SessionWriter:
        if self.writer is None:
            self.writer = SessionWriter(self._save_failed)
            self.writer.on_converted = self._converted
        return self.writer

    def _converted(self, path: Path, backup: Path) -> None:
        """From the writer thread: a version-1 file was converted in place as it was first written to."""
        if self._closing:
            return
        try:
            self.runtime.soon(lambda: self.notify(visible(f"{path.name} was converted to the session format of "
                                                          f"this version (appended to, never rewritten); the old "
                                                          f"file is kept as {backup.name}"), timeout=10))
        except RuntimeError:
            pass

    def _save_failed(self, failure: SaveFailure) -> None:
        """From the writer thread: a write failed (the file keeps its previous content)."""
        if self._closing:  # the loop is waiting for the writer: quitting reports it, a call to the loop would wait
            return
        try:
            self.runtime.soon(lambda: self.notify(str(failure), severity=Severity.ERROR, timeout=15))
        except RuntimeError:
            pass  # the app has ended: quitting reports it

    def close(self, streaming: bool, timeout: float = FLUSH_SECONDS) -> None:
        """The app is closing: the last state handed over, at most `timeout` s for it to land, then the lock
        is let go (unless a write failed or is still running: the writer thread finishes it first)."""
        if streaming or self.unsaved:
            self.save()
        elif self.draft_unsaved:  # only typed since: saved too (a session holding nothing else gets its file now)
            self.autosave(now=True)
        self._closing = True
        if self.writer is not None:
            failure = self.writer.close(timeout)
            if failure is not None:
                self.save_failure = str(failure)
        if self.lock and self.save_failure is None:
            self.lock.release()
