"""Reading and writing session files: appends (log_writer.py; session_log.py reads them), one writer at a time, clear errors for bad files.

A session file is version 2, one JSON object a line, appended to (docs/session-format.md); a file of version 1
(one JSON object, from before) opens as it always did, and is converted in place, its old bytes kept beside it as
`<name>.v1.bak`, when it is next written to (or by `ctxpane convert`).
"""

from __future__ import annotations

import fcntl
import json
import os
import stat
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from platformdirs import user_data_dir

from tui.sessions.model import VERSION, Session, SessionFormatError
from tui.sessions.safe_io import (MAX_SESSION_BYTES, SessionFileError, about, read_regular_file, write_atomic,
                                  write_private)

if TYPE_CHECKING:
    from tui.sessions.log_writer import LogWriter

__all__ = ["MAX_SESSION_BYTES", "SUFFIX", "Opened", "SessionAppender", "SessionFileError", "SessionLock",
           "SessionLocked", "convert_session", "followed_link", "held", "list_sessions", "load_session",
           "retitle_session", "save_session", "session_path", "session_text", "sessions_dir", "write_atomic",
           "write_private"]

SUFFIX = ".ctxpane.json"


class SessionLocked(SessionFileError):
    """Another ctxpane has this session open (`holder`: its pid as its lock file says, "" when no one holds it
    and the lock could not be taken for another reason)."""

    def __init__(self, text: str, holder: str = "") -> None:
        super().__init__(text)
        self.holder = holder


def sessions_dir() -> Path:
    """Default place: $XDG_DATA_HOME/ctxpane/sessions (platformdirs follows XDG on Linux)."""
    return Path(user_data_dir("ctxpane", appauthor=False)) / "sessions"


def session_path(session: Session, folder: Path | None = None) -> Path:
    return (folder or sessions_dir()) / f"{session.id}{SUFFIX}"


@dataclass
class Opened:
    session: Session
    path: Path
    read_only: bool = False
    note: str = ""
    version: int = 2  # 1: the one-object JSON of before (converted when next written)


def load_session(path: Path) -> Opened:
    """Read and check a session file; any problem is one SessionFileError line naming the file.

    The file is only read: opened without blocking (a FIFO is refused), never written here. A version-2 file's
    request bodies stay in the file until they are read (RequestRecord.body).
    """
    raw = read_regular_file(path, MAX_SESSION_BYTES)
    from tui.sessions.parse import decode_session, newer_note  # msgspec loads with the first session, not at start-up
    from tui.sessions.log_session import session_from_log
    from tui.sessions.session_log import LOG_VERSION, is_log, read_log

    log = is_log(raw)
    try:
        if log:
            state = read_log(raw)
            version = state.header.get("version")
            if not isinstance(version, int) or isinstance(version, bool) or not 2 <= version <= 1000:
                raise SessionFormatError("field `version`: expected an integer from 2 to 1000 in a file of lines")
            session = session_from_log(state, path)
        else:
            session, version = decode_session(raw)
    except SessionFormatError as exc:
        raise SessionFileError(about(path, str(exc))) from None
    if version > (LOG_VERSION if log else VERSION):
        return Opened(session, path, read_only=True, note=f"{newer_note(version)}: opened read-only",
                      version=version)
    return Opened(session, path, note="; ".join(session.read_notes), version=version)


def session_text(session: Session, secrets: list[str] | None = None) -> str:
    """The file's text, keys out (on the decoded values, never in anybody's words: tui/sessions/redacted.py):
    made where the session lives, written anywhere (write_atomic)."""
    from tui.sessions.redacted import redacted_session

    return json.dumps(redacted_session(session.to_dict(), secrets or []), ensure_ascii=False, indent=1)


def save_session(session: Session, path: Path, secrets: list[str] | None = None) -> None:
    """The whole session as a new version-2 file at `path`, written atomically (temporary file, flush, rename)."""
    from tui.sessions.log_writer import log_bytes

    write_atomic(path, log_bytes(session, secrets or []))


def backup_path(path: Path) -> Path:
    """Where a version-1 file's bytes are kept when it is converted: `<name>.v1.bak` (`.v1.2.bak`, … if taken)."""
    candidate = path.with_name(path.name + ".v1.bak")
    number = 2
    while candidate.exists() or candidate.is_symlink():
        candidate = path.with_name(f"{path.name}.v1.{number}.bak")
        number += 1
    return candidate


def convert_session(path: Path, session: Session | None = None, secrets: list[str] | None = None) -> Path | None:
    """A version-1 file at `path` rewritten as version 2 in place, its old bytes kept as a backup first (returned).

    None when the file is version 2 already. The backup is written (0600, flushed) before the file is replaced,
    and the replacement is atomic: at every moment one of the two holds the session whole.
    """
    from tui.sessions.session_log import is_log

    raw = read_regular_file(path, MAX_SESSION_BYTES)
    if is_log(raw):
        return None
    if session is None:
        opened = load_session(path)
        if opened.read_only:
            raise SessionFileError(about(path, f"is {opened.note}: not converted"))
        session = opened.session
    backup = backup_path(path)
    write_atomic(backup, raw)
    save_session(session, path, secrets)
    return backup


class SessionAppender:
    """Appends a session's changes to its file (log_writer.LogWriter), one file each; from one thread at a time.

    The first append to a file reads it to go on from what it holds (a version-1 file is converted first, with
    its backup); a file that is not a session, or that cannot be read, is never appended to: the session is then
    written whole over it only if it is a file of the current version that this session came from.
    """

    def __init__(self, sync: bool = True) -> None:
        self._writers: dict[Path, LogWriter] = {}
        self.sync = sync
        self.converted: list[tuple[Path, Path]] = []  # (file, its version-1 backup), for the app to say

    def append(self, session: Session, path: Path, secrets: list[str] | None = None) -> int:
        writer = self._writers.get(path)
        if writer is None or writer.session_id != session.id:
            writer = self._start(session, path, secrets or [])
        try:
            return writer.append(session, secrets or [])
        except BaseException:
            self._writers.pop(path, None)  # read again from the file at the next append
            raise

    def _start(self, session: Session, path: Path, secrets: list[str]) -> LogWriter:
        from tui.sessions.log_writer import LogWriter
        from tui.sessions.session_log import is_log, read_log

        writer = LogWriter(path, self.sync)
        writer.session_id = session.id
        try:
            before = os.lstat(path)
            raw = read_regular_file(path, MAX_SESSION_BYTES)
        except (SessionFileError, OSError):
            if path.exists() or path.is_symlink():
                raise
            raw = b""
        else:
            writer.identity = (before.st_dev, before.st_ino)  # the file read: another put there after is refused
        if raw and is_log(raw):
            try:
                state = read_log(raw)
            except SessionFormatError as exc:
                raise SessionFileError(about(path, f"{exc}: not appended to")) from None
            if state.header.get("id") not in (None, session.id):  # another session's file: never written over
                raise SessionFileError(about(path, f"holds another session (id {str(state.header.get('id'))[:40]}), "
                                                   "not this one: not written to"))
            writer.resume(state)
        elif raw.strip():
            problem = _not_converted(raw, session.id)
            if problem:
                raise SessionFileError(about(path, f"{problem}: not written to"))
            backup = backup_path(path)
            write_atomic(backup, raw)
            self.converted.append((path, backup))
        self._writers[path] = writer
        return writer

    def forget(self, path: Path) -> None:
        self._writers.pop(path, None)


def followed_link(path: Path | None) -> Path | None:
    """A session file named through a symbolic link is the file it points to: appends never follow a link (a file
    swapped for one must not redirect them), and the lock must be the one beside the file itself (two links to one
    file, or an app and `convert`, are one session). A link that leads nowhere stays as it is (using it says so)."""
    if path is None or not path.is_symlink():
        return path
    try:
        return path.resolve(strict=True)
    except (OSError, RuntimeError):
        return path


def _not_converted(raw: bytes, ident: str) -> str:
    """Why a file that is not of lines is not this session's file of version 1 ("" when it is): what the app
    converts on its first write is the file it read, never one put at the path since (another session, any file)."""
    import msgspec

    from tui.sessions.model import FORMAT

    class Head(msgspec.Struct):
        format: object = None
        id: object = None

    try:
        head = msgspec.json.decode(raw, type=Head)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return "is not a session file"
    if head.format != FORMAT:
        return "is not a session file"
    if head.id is not None and head.id != ident:
        return f"holds another session (id {str(head.id)[:40]}), not this one"
    return ""


class SessionLock:
    """An advisory lock file beside the session, held while the app has the session open.

    The session file itself cannot carry the lock: every save renames a new file over it. The
    lock file is removed on release, so folders do not fill with them; that is safe only because
    it is removed while still locked, and a lock is not taken until the file locked is the one
    at the path (a process that opened the old file just before it went would otherwise hold a
    lock nobody else sees while a third locks the new file: two writers).
    """

    ATTEMPTS = 20

    def __init__(self, path: Path):
        self.path = path.with_name(path.name + ".lock")
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock or raise SessionLocked (held elsewhere, or no lock file can be made here)."""
        for _attempt in range(self.ATTEMPTS):
            fd = self._open()
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                holder = os.read(fd, 32).decode(errors="replace").strip() or "?"
                os.close(fd)
                if isinstance(exc, BlockingIOError):
                    raise SessionLocked(f"{self.path.name[:-5]} is open in another ctxpane (pid {holder[:12]}); "
                                        "close it there, or open a copy", holder[:12]) from None
                raise SessionLocked(f"cannot lock {self.path.name}: {exc.strerror or exc}") from None
            if self._still_linked(fd):
                os.ftruncate(fd, 0)
                os.write(fd, str(os.getpid()).encode())
                self._fd = fd
                return
            os.close(fd)  # the holder removed it as we locked it: lock the file now at the path
        raise SessionLocked(f"cannot lock {self.path.name}: it keeps being replaced")

    def _still_linked(self, fd: int) -> bool:
        try:
            at_path = os.lstat(self.path)
        except FileNotFoundError:
            return False
        mine = os.fstat(fd)
        return (at_path.st_dev, at_path.st_ino) == (mine.st_dev, mine.st_ino)

    def _open(self) -> int:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o600)
        except OSError as exc:  # a folder we may not write to, a symlink planted as the lock file
            raise SessionLocked(f"cannot lock {self.path.name}: {exc.strerror or exc}") from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise SessionLocked(f"cannot lock {self.path.name}: it is not a regular file")
        return fd

    def release(self) -> None:
        if self._fd is not None:
            try:
                self.path.unlink(missing_ok=True)  # while still locked: see the class comment
            except OSError:
                pass  # a folder we may not change: the file stays, which is harmless
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


@contextmanager
def held(path: Path) -> Iterator[Path]:
    """The session file's lock, held for a write from outside an app (a rename, an export over it); yields the
    file itself (a link followed). SessionLocked, naming the holder, when another ctxpane has it open."""
    path = followed_link(path) or path
    lock = SessionLock(path)
    lock.acquire()
    try:
        yield path
    finally:
        lock.release()


def retitle_session(path: Path, title: str) -> None:
    """Give the session in `path` a new title, and change nothing else: under its lock (SessionLocked when another
    ctxpane holds it), the file read again and only the title appended. Never a copy read before the lock was
    taken: what its writer saved meanwhile would be written over."""
    with held(path) as path:
        opened = load_session(path)
        if opened.read_only:
            raise SessionFileError(about(path, f"is {opened.note}: not renamed"))
        opened.session.title = title
        SessionAppender().append(opened.session, path)


def _modified(path: Path) -> float:
    try:
        return path.lstat().st_mtime  # a dangling symlink is listed (with its error), not a crash
    except OSError:
        return 0.0


def list_sessions(folder: Path | None = None) -> list[tuple[Path, dict[str, Any]]]:
    """Session files in a folder with their title and times (unreadable files listed with the error)."""
    folder = folder or sessions_dir()
    rows = []
    for path in sorted(folder.glob(f"*{SUFFIX}"), key=_modified, reverse=True):
        try:
            opened = load_session(path)
            rows.append((path, {"title": opened.session.title, "updated": opened.session.updated,
                                "messages": len(opened.session.messages), "error": ""}))
        except SessionFileError as exc:
            rows.append((path, {"title": path.name, "updated": "", "messages": 0, "error": str(exc)}))
    return rows
