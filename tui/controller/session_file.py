"""Where the open session is kept: its file, the lock on it, read-only or not, and saving as you go.

Moved here from the app's session mixin: the bodies are as they were, with the app's parts
(its timer, its notifications, its settings) given to this object instead.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

from tui.context.safety import visible
from tui.sessions.model import Session
from tui.sessions.store import SessionLock, SessionLocked, save_session, session_path, session_text, write_atomic


class SessionFile:
    def __init__(self, current: Callable[[], Session], set_timer: Callable[[float, Callable[[], None]], Any],
                 notify: Callable[..., None], client: Callable[[], Any], api_key_env: str,
                 folder: Path | None = None) -> None:
        self._current, self.set_timer, self.notify, self._client = current, set_timer, notify, client
        self.api_key_env, self.folder = api_key_env, folder
        self.session_file: Path | None = None
        self.lock: SessionLock | None = None
        self.read_only = False
        self._save_timer = None
        self._writer = None

    @property
    def session(self) -> Session:
        return self._current()

    def open(self, path: Path | None, read_only: bool) -> None:
        """This file (or none yet) holds the session from now on; the lock on the previous one is let go."""
        self.read_only = read_only
        if self.lock:
            self.lock.release()
            self.lock = None
        if path is not None and not self.read_only:
            lock = SessionLock(path)
            try:
                lock.acquire()
                self.lock = lock
            except SessionLocked as exc:
                self.read_only = True
                self.notify(visible(str(exc)) + " — opened read-only", severity="warning", timeout=15)
        self.session_file = path

    def autosave(self, now: bool = False) -> None:
        if self.read_only or not self.session.messages:
            return
        if self.session_file is None:
            folder = self.folder
            self.session_file = session_path(self.session, folder)
            self.lock = SessionLock(self.session_file)
            try:
                self.lock.acquire()
            except SessionLocked:
                self.lock = None
        if now:
            self._save()
        elif self._save_timer is None:
            self._save_timer = self.set_timer(0.3, self._save)

    def _secrets(self) -> list[str]:
        """What no file may hold: the key in use, and the key in the environment even when it was not sent."""
        client = self._client()
        found = list(client.endpoint.secrets) if client else []
        key = os.environ.get(self.api_key_env) or ""
        if len(key) >= 8 and key not in found:  # a placeholder such as "x" is no secret: masking it rewrites text
            found.append(key)
        return found

    def _save_in_background(self) -> None:
        """While a reply streams: the text is made here, the disk write (with its fsync) runs elsewhere.

        One writer thread keeps the writes in order, so an older state never lands after a newer one.
        """
        if self.session_file is None or self.read_only:
            return
        if self._writer is None:
            from concurrent.futures import ThreadPoolExecutor
            self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ctxpane-save")
        secrets = self._secrets()
        self._writer.submit(write_atomic, self.session_file, session_text(self.session, secrets))

    def _save(self) -> None:
        self._save_timer = None
        writer = self._writer
        if writer is not None:  # let queued background writes land first: this one is the newest
            writer.submit(lambda: None).result()
        if self.session_file is None or self.read_only:
            return
        secrets = self._secrets()
        try:
            save_session(self.session, self.session_file, secrets)
        except OSError as exc:
            self.notify(f"could not save the session: {exc}", severity="error")

    def close(self, streaming: bool) -> None:
        """The app is closing: a reply cut short is saved, every queued write lands, then the lock is let go."""
        if streaming:
            self._save()
        writer = self._writer
        if writer is not None:
            writer.shutdown(wait=True)  # every queued write lands before the lock is let go
        if self.lock:
            self.lock.release()
