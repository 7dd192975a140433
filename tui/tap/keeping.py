"""What the tap's recorder keeps, and for how long: each conversation's file appended to at a bounded pace, and the
memory of renderings, bodies and threads let go of once the file holds them. A part of the Recorder
(tui/tap/recorder.py), on its recording thread."""

from __future__ import annotations

import logging
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from tui.tap.conversations import Conversations
from tui.tap.state import Tapped, Thread

log = logging.getLogger("ctxpane.tap")

KEEP_VIEWS = 200  # requests whose rendering stays in memory for the view
KEEP_VIEW_CHARS = 2 * 1024 * 1024  # and at most documents of these many characters in all (long conversations)
SAVE_EVERY = 0.5  # seconds between two saves of one conversation's file at most
CLAIM_ATTEMPTS = 50  # names tried for a conversation's file (`-2`, `-3`, …) before going on without a lock
KEEP_TIMINGS = 2000  # the latest appends' durations kept (for the benchmark: flat, whatever the length)


class Keeping:
    """The Recorder's saving and letting go (the Recorder holds these attributes)."""

    folder: Path
    conversations: Conversations
    by_format: dict[Any, Conversations]
    threads: dict[int, Thread]
    failures: int
    _pool: ThreadPoolExecutor
    with_views: list[Tapped]
    view_chars: int
    append_seconds: list[float]
    append_cpu: list[float]
    written: set[Path]  # every session file an append has landed in
    cut_by_stop: int  # replies the tap's stop cut short (recorded as they stood)
    left_out: int  # requests a hurried stop left out

    def _guarded_flush(self) -> None:
        for thread in list(self.threads.values()):
            if thread.dirty:
                try:
                    self.write(thread)
                except Exception:  # noqa: BLE001 - a disk problem is logged, the tap goes on
                    self.failures += 1
                    log.exception("saving %s failed", thread.path)

    def claim(self, ident: str) -> tuple[str, Any]:
        """A session id whose file no one else has (another tap started in the same second, an earlier run), and
        the lock on that file: an app that opens it while the tap writes it opens it read-only (two writers would
        refuse each other's appends). Without a lock to be had (a folder not writable), the id as it is."""
        from tui.sessions.store import SUFFIX, SessionLock, SessionLocked

        for attempt in range(1, CLAIM_ATTEMPTS + 1):
            name = ident if attempt == 1 else f"{ident}-{attempt}"
            path = self.folder / f"{name}{SUFFIX}"
            if path.exists() or path.is_symlink():
                continue
            lock = SessionLock(path)
            try:
                lock.acquire()
            except SessionLocked:
                continue
            if path.exists() or path.is_symlink():  # made as the lock was taken
                lock.release()
                continue
            return name, lock
        return ident, None

    def saved_line(self) -> str:
        """What the tap's files hold as it ends, said as it is: the files written and found, and the replies the
        stop cut."""
        found = sum(1 for path in self.written if path.is_file())
        if not found:
            lost = f" ({self.left_out} requests left out: the stop was hurried)" if self.left_out else ""
            return f"no conversation was recorded in {self.folder}{lost}"
        cut = f" ({self.cut_by_stop} cut by the stop, marked incomplete)" if self.cut_by_stop else ""
        lost = f"; {self.left_out} requests left out, not recorded (the stop was hurried)" if self.left_out else ""
        return f"{found} conversation{'' if found == 1 else 's'} saved in {self.folder}{cut}{lost}"

    def let_go_of_files(self) -> None:
        """The tap is done writing: its files reach the disk, and their locks are let go (an app may then write to
        them). Each write went to the system at once (a killed tap loses nothing it wrote), but waiting for the disk
        on each was most of the recording's time under busy traffic: it is waited for here, once for all."""
        if self.written and hasattr(os, "sync"):
            os.sync()
        elif self.written:  # (no os.sync, as on Windows: each file the tap wrote)
            for path in self.written:
                try:
                    with open(path, "rb+") as file:
                        os.fsync(file.fileno())
                except OSError:
                    pass
        for thread in self.threads.values():
            if thread.lock is not None:
                thread.lock.release()
                thread.lock = None

    def save(self, thread: Thread) -> None:
        """Save the conversation's file now, or once its pause is over: a busy client's requests cost one write a
        moment, not one each. The pause is SAVE_EVERY, or ten times the last write when that took longer (the file
        grows with the conversation): writing takes at most a tenth of the recording thread's time."""
        thread.dirty = True
        wait = thread.next_save - time.monotonic()
        if wait <= 0:
            self.write(thread)
        elif not thread.pending:
            thread.pending = True
            timer = threading.Timer(wait, self._save_later)
            timer.daemon = True
            timer.start()

    def _save_later(self) -> None:
        try:
            self._pool.submit(self._guarded_flush)
        except RuntimeError:  # the recorder closed meanwhile: close() saved what was due
            pass

    def write(self, thread: Thread) -> None:
        """Append what is new in the conversation to its file, then let go of what only the file needs now."""
        from tui.sessions.log_writer import LogWriter

        self.folder.mkdir(parents=True, exist_ok=True)
        thread.dirty = thread.pending = False
        started, cpu = time.monotonic(), time.thread_time()
        if thread.log is None:  # (no fsync per write: the tap waits for the disk once, as it ends)
            thread.log = LogWriter(thread.path, sync=False)
        try:
            thread.log.append(thread.session, sorted(thread.secrets))  # its own requests' keys, no others
        except BaseException:
            thread.dirty = True  # still due: the next save, or the last one as the tap ends, tries it again
            raise
        took = time.monotonic() - started
        self.written.add(thread.path)
        self.append_seconds.append(took)
        self.append_cpu.append(time.thread_time() - cpu)
        del self.append_seconds[:-KEEP_TIMINGS], self.append_cpu[:-KEEP_TIMINGS]
        thread.next_save = time.monotonic() + max(SAVE_EVERY, 10 * took)
        self.release(thread)

    def close_threads(self) -> None:
        """A conversation no longer matched against (conversations.MAX_OPEN) is in its file: its thread goes once
        everything of it is written, so the tap's memory does not grow with the conversations it has seen."""
        still = {conversation.number for conversations in (self.conversations, *self.by_format.values())
                 for conversation in conversations.open}  # each format's conversations are matched on their own
        if len(self.threads) <= len(still):
            return
        for number in [n for n, t in self.threads.items() if n not in still and not t.dirty and not t.pending
                       and all(tapped.done for tapped in t.tapped)]:
            closed = self.threads.pop(number)
            if closed.lock is not None:
                closed.lock.release()
            self.release(closed, every=True)  # its requests live on in the list: as figures, their bodies in the file

    def release(self, thread: Thread, every: bool = False) -> None:
        """Memory stays bounded however long a conversation runs: a request settled in its file keeps its figures
        here (a few kB: the costs go on from them), not its body (the whole conversation, each time) nor the raw
        bytes of its reply; both are read again from the file when asked for. `every`: the conversation is closed
        and all of it is in its file (its last requests too, watched until then)."""
        from tui.sessions.log_session import file_loaders

        log = thread.log
        if log is None:
            return
        last = len(thread.session.requests) if every else min(log.settled, len(thread.session.requests))
        while thread.released < last:
            index = thread.released
            if every or index not in log.watch:
                record = thread.session.requests[index]
                record.let_go_of_body(*file_loaders(thread.path, index, record.format))
                stream = record.reply.get("stream")
                if isinstance(stream, dict) and "raw" in stream:
                    record.reply = {**record.reply, "stream": {k: v for k, v in stream.items()
                                                               if k not in ("raw", "offsets")}}
            thread.released += 1

    def let_go(self, thread: Thread, tapped: Tapped) -> None:
        """Memory stays bounded however long the tap runs: a conversation keeps the rendering of its last two
        requests (the next one is compared with the last), and only the latest KEEP_VIEWS requests keep
        theirs for the view; every request stays whole in its session file."""
        views = thread.replayer._views  # noqa: SLF001
        for index in [i for i in views if i < tapped.index - 1]:
            del views[index]
        self.with_views.append(tapped)
        self.view_chars += _document_chars(tapped.view)
        while len(self.with_views) > KEEP_VIEWS or len(self.with_views) > 2 and self.view_chars > KEEP_VIEW_CHARS:
            old = self.with_views.pop(0)
            self.view_chars -= _document_chars(old.view)
            old.view = old.previous = None
            old.problem = old.problem or "let go from memory: open its session file (replay) to see it again"


def _document_chars(view: Any) -> int:
    document = getattr(view, "document", None)
    return len(getattr(document, "text", "") or "")
