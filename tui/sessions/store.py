"""Reading and writing session files: atomic saves, one writer at a time, clear errors for bad files."""

from __future__ import annotations

import fcntl
import json
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from platformdirs import user_data_dir

from .model import NewerVersion, Session, SessionFormatError, session_from_dict

MAX_SESSION_BYTES = 256 * 1024 * 1024
SUFFIX = ".ctxpane.json"


class SessionFileError(Exception):
    """A session file that cannot be opened or saved; the message says why, in one line."""


class SessionLocked(SessionFileError):
    """Another ctxpane has this session open."""


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


def _read_bytes(path: Path) -> bytes:
    if not path.exists():
        raise SessionFileError(f"no such file: {path}")
    if path.is_dir():
        raise SessionFileError(f"{path} is a directory, not a session file")
    try:
        size = path.stat().st_size
        if size > MAX_SESSION_BYTES:
            raise SessionFileError(f"{path} is {size // (1024 * 1024)} MiB, over the {MAX_SESSION_BYTES // (1024 * 1024)}"
                                   " MiB a session may have")
        return path.read_bytes()
    except PermissionError:
        raise SessionFileError(f"cannot read {path}: permission denied") from None
    except OSError as exc:
        raise SessionFileError(f"cannot read {path}: {exc.strerror or exc}") from None


def load_session(path: Path) -> Opened:
    raw = _read_bytes(path)
    if b"\x00" in raw[:65536]:
        raise SessionFileError(f"{path} is a binary file, not a session")
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise SessionFileError(f"{path} is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        hint = " (the file ends early: truncated?)" if exc.pos >= len(raw.rstrip()) else ""
        raise SessionFileError(f"{path} is not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}{hint}") \
            from None
    try:
        return Opened(session_from_dict(data), path)
    except NewerVersion as exc:
        try:  # read what this version understands; never write it back
            session = session_from_dict({**data, "version": 1})
        except SessionFormatError:
            raise SessionFileError(f"{path}: {exc}; it cannot be read by this version") from None
        return Opened(session, path, read_only=True, note=f"{exc}: opened read-only")
    except SessionFormatError as exc:
        raise SessionFileError(f"{path}: {exc}") from None


def redact(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return re.sub(r"(Bearer\s+)[A-Za-z0-9._\-]{12,}", r"\1***", text)


def session_text(session: Session, secrets: list[str] | None = None) -> str:
    """The file's text, keys redacted: made where the session lives, written anywhere (write_atomic)."""
    return redact(json.dumps(session.to_dict(), ensure_ascii=False, indent=1), secrets or [])


def save_session(session: Session, path: Path, secrets: list[str] | None = None) -> None:
    write_atomic(path, session_text(session, secrets))


def write_atomic(path: Path, text: str) -> None:
    """Write to a temporary file beside the target, flush it to disk, then rename over the target."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    _sync_dir(path.parent)


def _sync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class SessionLock:
    """An advisory lock beside the session file, held while the app has the session open."""

    def __init__(self, path: Path):
        self.path = path.with_name(path.name + ".lock")
        self._fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise SessionLocked(f"{self.path.name[:-5]} is open in another ctxpane (pid {holder}); "
                                "close it there, or open a copy") from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
            self.path.unlink(missing_ok=True)


def list_sessions(folder: Path | None = None) -> list[tuple[Path, dict]]:
    """Session files in a folder with their title and times (unreadable files listed with the error)."""
    folder = folder or sessions_dir()
    rows = []
    for path in sorted(folder.glob(f"*{SUFFIX}"), key=lambda p: p.stat().st_mtime, reverse=True):
        try:
            opened = load_session(path)
            rows.append((path, {"title": opened.session.title, "updated": opened.session.updated,
                                "messages": len(opened.session.messages), "error": ""}))
        except SessionFileError as exc:
            rows.append((path, {"title": path.name, "updated": "", "messages": 0, "error": str(exc)}))
    return rows
