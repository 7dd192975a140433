"""A full-text index of the saved sessions' contents (SQLite FTS5), kept up to date on each search.

The index is a cache: it lives in $XDG_CACHE_HOME/ctxpane/search.sqlite and can always be made again
from the session files. Each search first looks at the folder's files (a stat each) and re-reads only
those whose (mtime_ns, size, inode) changed; rows of files that are gone are dropped. Everything is
bounded: file size, characters indexed per session, query length, results. A damaged index file is
deleted and made again; one that cannot be used (locked by another ctxpane, a read-only or full cache
folder) gives way to an index in memory for the rest of this object's life.

The index holds the sessions' text as the session files do (keys were redacted when they were saved),
with the same 0600 mode; nothing here is logged.
"""

from __future__ import annotations

import os
import re
import sqlite3
import stat
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum, IntEnum
from pathlib import Path

from platformdirs import user_cache_dir

from tui.sessions.store import SUFFIX, load_session

__all__ = ["Backing", "FileState", "Hit", "SearchIndex", "SearchResult", "default_index_path", "match_expression"]

MAX_FILE_BYTES = 32 * 1024 * 1024  # larger session files are listed as not indexed, never read for the index
MAX_SESSION_CHARS = 2_000_000  # text indexed per session: the rest of a huge session is not searched
MAX_HITS = 200
MAX_QUERY_CHARS = 200
SNIPPET_WORDS = 12
BUSY_SECONDS = 5.0  # how long to wait for another ctxpane's search before using an index in memory
SCHEMA_VERSION = 1
TITLE = -1  # the message number of a session's title row
_UNSAFE_IN_QUERY = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]")

SCHEMA = f"""
CREATE TABLE files (id INTEGER PRIMARY KEY, path TEXT UNIQUE NOT NULL, folder TEXT NOT NULL,
                    mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL, ino INTEGER NOT NULL,
                    state INTEGER NOT NULL, title TEXT NOT NULL);
CREATE INDEX files_by_folder ON files(folder);
CREATE TABLE parts (rowid INTEGER PRIMARY KEY, file_id INTEGER NOT NULL, message INTEGER NOT NULL);
CREATE INDEX parts_by_file ON parts(file_id);
CREATE VIRTUAL TABLE texts USING fts5(body, tokenize='unicode61 remove_diacritics 2');
PRAGMA user_version = {SCHEMA_VERSION};
"""


class FileState(IntEnum):
    """What the index knows of one session file (stored as its number)."""

    INDEXED = 1
    TOO_LARGE = 2
    UNREADABLE = 3


class Backing(Enum):
    FILE = "file"
    MEMORY = "memory"


@dataclass(frozen=True)
class Hit:
    path: Path
    title: str
    snippet: str  # plain text around the first match, "…" where it is cut; shown only through tui/app/shown.py
    message: int | None  # the index of the first message that matches; None when only the title does


@dataclass
class SearchResult:
    hits: list[Hit] = field(default_factory=list)
    too_large: list[Path] = field(default_factory=list)  # not indexed: over MAX_FILE_BYTES
    unreadable: int = 0  # session files that could not be loaded (the browser lists them with their error)
    complete: bool = True  # False when the search was cancelled before it ended
    failed: bool = False  # no index could be used at all (not even in memory)


class _ForeignIndex(sqlite3.DatabaseError):
    """A database at the index's path with another (older) layout: made again like a damaged one."""


def default_index_path() -> Path:
    return Path(user_cache_dir("ctxpane", appauthor=False)) / "search.sqlite"


def match_expression(query: str) -> str | None:
    """An FTS5 query that can never be a syntax error: every word a quoted string, the last a prefix.

    Operators a user types (OR, NEAR(, -, *, quotes) are words to look for, not syntax. None when
    nothing searchable is left.
    """
    cleaned = _UNSAFE_IN_QUERY.sub(" ", _storable(query[:MAX_QUERY_CHARS]))
    words = [word for word in cleaned.split() if any(char.isalnum() for char in word)]
    if not words:
        return None
    quoted = ['"' + word.replace('"', '""') + '"' for word in words]
    return " ".join(quoted) + "*"  # a prefix match on the word still being typed


def _storable(text: str) -> str:
    """Text SQLite can take: a lone surrogate (which UTF-8 cannot encode) becomes '?'."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")


def _signature(info: os.stat_result) -> tuple[int, int, int]:
    return info.st_mtime_ns, info.st_size, info.st_ino


def session_files(folder: Path) -> dict[str, tuple[int, int, int]]:
    """The folder's regular session files and their signatures (a link to nowhere or a FIFO is left out)."""
    found = {}
    for path in folder.glob(f"*{SUFFIX}"):
        try:
            info = path.stat()
        except (OSError, ValueError):
            continue
        if stat.S_ISREG(info.st_mode):
            found[str(path)] = _signature(info)
    return found


def session_texts(path: Path, limit: int) -> tuple[str, list[tuple[int, str]]] | None:
    """The title and (message index, text) of each message with text, at most `limit` characters in all;
    None when the file cannot be loaded."""
    try:
        session = load_session(path).session
    except Exception:  # noqa: BLE001 - any file that fails to load is skipped, the others still searched
        return None
    texts, left = [], limit
    for index, message in enumerate(session.messages):
        text = message.text()
        if text and left > 0:
            texts.append((index, _storable(text[:left])))
            left -= len(text)
    return _storable(session.title), texts


class SearchIndex:
    """Searches of one or more session folders; safe to call from worker threads (one search at a time)."""

    def __init__(self, path: Path | None = None, *, max_file_bytes: int = MAX_FILE_BYTES,
                 max_session_chars: int = MAX_SESSION_CHARS, max_hits: int = MAX_HITS) -> None:
        self.path = path or default_index_path()
        self.max_file_bytes, self.max_session_chars, self.max_hits = max_file_bytes, max_session_chars, max_hits
        self.loads = 0  # session files read to index them: what an incremental search saves
        self.backing = Backing.FILE
        self._memory: sqlite3.Connection | None = None
        self._lock = threading.Lock()  # a newer search waits for a cancelled one to stop between files

    def search(self, folder: Path, query: str, progress: Callable[[int, int], None] | None = None,
               cancelled: Callable[[], bool] | None = None) -> SearchResult:
        """Bring the index up to date for `folder`, then find `query` there. Never raises.

        `progress(done, total)` is told of the files being (re)indexed; `cancelled()` is asked between files.
        """
        expression = match_expression(query)
        with self._lock:
            for _attempt in range(3):
                try:
                    return self._search_once(folder, expression, progress, cancelled or (lambda: False))
                except (sqlite3.OperationalError, OSError):  # locked elsewhere, read-only, full: memory
                    self._use_memory()
                except sqlite3.DatabaseError:  # not a database, damaged, another layout: made again
                    self._discard()
            return SearchResult(failed=True)

    def _search_once(self, folder: Path, expression: str | None, progress: Callable[[int, int], None] | None,
                     cancelled: Callable[[], bool]) -> SearchResult:
        db = self._connect()
        try:
            key = os.path.abspath(folder)
            if not self._refresh(db, key, progress, cancelled):
                return SearchResult(complete=False)
            result = self._states(db, key)
            if expression is not None:
                result.hits = self._hits(db, key, expression)
            return result
        finally:
            if db is not self._memory:
                db.close()

    # -- the database -------------------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        if self.backing is Backing.MEMORY:
            if self._memory is None:
                self._memory = sqlite3.connect(":memory:", check_same_thread=False)
                self._memory.executescript(SCHEMA)
            return self._memory
        self._prepare_file()
        db = sqlite3.connect(self.path, timeout=BUSY_SECONDS, check_same_thread=False)
        try:
            db.execute("PRAGMA synchronous = OFF")  # a cache: a crash at worst damages it, and damage means remake
            self._check_schema(db)
        except BaseException:
            db.close()
            raise
        return db

    def _prepare_file(self) -> None:
        """The index file, made 0600 in a 0700 folder; anything but a regular file there is removed."""
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            if not stat.S_ISREG(os.lstat(self.path).st_mode):
                self.path.unlink()  # a link or FIFO planted as the cache: never opened
        except FileNotFoundError:
            pass
        os.close(os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o600))

    @staticmethod
    def _check_schema(db: sqlite3.Connection) -> None:
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if version == SCHEMA_VERSION:
            return
        if db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
            raise _ForeignIndex("the index has another layout")
        db.executescript(SCHEMA)

    def _use_memory(self) -> None:
        if self.backing is Backing.MEMORY and self._memory is not None:
            self._memory.close()  # failing even in memory: start that one afresh too
            self._memory = None
        self.backing = Backing.MEMORY

    def _discard(self) -> None:
        try:
            for suffix in ("", "-journal", "-wal", "-shm"):
                Path(str(self.path) + suffix).unlink(missing_ok=True)
        except OSError:
            self._use_memory()  # cannot remove it: it cannot be made again there either

    # -- keeping it up to date ------------------------------------------------------------------------------

    def _refresh(self, db: sqlite3.Connection, folder: str, progress: Callable[[int, int], None] | None,
                 cancelled: Callable[[], bool]) -> bool:
        """Re-index the changed files, newest first, one commit each (a cancelled refresh keeps its work)."""
        on_disk = session_files(Path(folder))
        known = {path: (file_id, (mtime, size, ino)) for file_id, path, mtime, size, ino in db.execute(
            "SELECT id, path, mtime_ns, size, ino FROM files WHERE folder = ?", (folder,))}
        for path in known.keys() - on_disk.keys():
            self._forget(db, known[path][0])
        db.commit()
        changed = sorted((path for path, signature in on_disk.items()
                          if path not in known or known[path][1] != signature),
                         key=lambda path: on_disk[path][0], reverse=True)
        for done, path in enumerate(changed):
            if cancelled():
                return False
            if progress is not None:
                progress(done, len(changed))
            if path in known:
                self._forget(db, known[path][0])
            self._add(db, folder, path, on_disk[path])
            db.commit()
        return True

    @staticmethod
    def _forget(db: sqlite3.Connection, file_id: int) -> None:
        # by rowid: deleting from an FTS5 table by any other column would read every row
        db.execute("DELETE FROM texts WHERE rowid IN (SELECT rowid FROM parts WHERE file_id = ?)", (file_id,))
        db.execute("DELETE FROM parts WHERE file_id = ?", (file_id,))
        db.execute("DELETE FROM files WHERE id = ?", (file_id,))

    def _add(self, db: sqlite3.Connection, folder: str, path: str, signature: tuple[int, int, int]) -> None:
        # the signature is the one taken before reading: a save made meanwhile shows as a change next time
        loaded = None
        if signature[1] <= self.max_file_bytes:
            self.loads += 1
            loaded = session_texts(Path(path), self.max_session_chars)
        state = FileState.TOO_LARGE if signature[1] > self.max_file_bytes else (
            FileState.UNREADABLE if loaded is None else FileState.INDEXED)
        title = loaded[0] if loaded else Path(path).name
        file_id = db.execute("INSERT INTO files (path, folder, mtime_ns, size, ino, state, title) "
                             "VALUES (?, ?, ?, ?, ?, ?, ?)", (path, folder, *signature, int(state), title)).lastrowid
        if loaded is not None:
            for message, text in [(TITLE, title), *loaded[1]]:
                part = db.execute("INSERT INTO parts (file_id, message) VALUES (?, ?)", (file_id, message)).lastrowid
                db.execute("INSERT INTO texts (rowid, body) VALUES (?, ?)", (part, text))

    # -- reading it -----------------------------------------------------------------------------------------

    @staticmethod
    def _states(db: sqlite3.Connection, folder: str) -> SearchResult:
        rows = db.execute("SELECT path, state FROM files WHERE folder = ? AND state != ?",
                          (folder, int(FileState.INDEXED))).fetchall()
        return SearchResult(too_large=sorted(Path(path) for path, state in rows if state == FileState.TOO_LARGE),
                            unreadable=sum(state == FileState.UNREADABLE for _path, state in rows))

    def _hits(self, db: sqlite3.Connection, folder: str, expression: str) -> list[Hit]:
        """Sessions that match, newest first, each with the first matching part (title, then messages)."""
        rows = db.execute(
            "SELECT f.path, f.title, min(p.rowid) FROM texts JOIN parts p ON p.rowid = texts.rowid "
            "JOIN files f ON f.id = p.file_id WHERE texts MATCH ? AND f.folder = ? "
            "GROUP BY f.id ORDER BY f.mtime_ns DESC LIMIT ?", (expression, folder, self.max_hits)).fetchall()
        return [Hit(Path(path), title, *self._snippet(db, expression, part)) for path, title, part in rows]

    @staticmethod
    def _snippet(db: sqlite3.Connection, expression: str, part: int) -> tuple[str, int | None]:
        row = db.execute(
            "SELECT snippet(texts, 0, '', '', '…', ?), (SELECT message FROM parts WHERE rowid = texts.rowid) "
            "FROM texts WHERE texts MATCH ? AND rowid = ?", (SNIPPET_WORDS, expression, part)).fetchone()
        if row is None:
            return "", None
        return row[0], (None if row[1] == TITLE else row[1])
