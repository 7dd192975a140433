"""What the user sent, across sessions: the prompt history Up/Down and Ctrl+R recall from.

One JSON line per prompt in $XDG_DATA_HOME/ctxpane/prompts.jsonl, private (0600) like a session. The file is
outside input when read back: a line that is not a small JSON object with a text is skipped, the file is read
only up to its size limit, and only the newest MAX_KEPT prompts are kept when it is written again.
No prompt holds an API key: each is masked, as it is kept, against every key the process knows of (those
tui/client/keys.py holds, whatever variable named them, and the connection's), whether or not a key is attached
to the connection (the session keeps the prompt as typed; this file never does). Two apps may write at once: each
write reads the file again under a lock (a sibling `.lock` file) and adds its own new prompts to what is there.
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

from platformdirs import user_data_dir

from tui.client.keys import held_keys
from tui.context.untrusted.redaction import Redactor, known_secrets_masked
from tui.sessions.safe_io import SessionFileError, read_regular_file, write_atomic

MAX_KEPT = 1000  # prompts kept across sessions
MAX_PROMPT = 20_000  # characters: a longer message (a pasted file) is not a prompt to recall
MAX_KEPT_CHARS = 2_000_000  # all prompts together: the oldest go first past it
MAX_LINE = 6 * MAX_PROMPT + 200  # a prompt's line: JSON writes a control character as six (\u001b)
MAX_FILE = 6 * MAX_KEPT_CHARS + 200 * MAX_KEPT  # bytes read at most: what the limits above can write
LOCK_WAIT = 10.0  # seconds a write waits for another app's write before it gives up (and says so)


@dataclass(frozen=True)
class Prompt:
    text: str
    session: str = ""  # the session's id it was sent in


def history_file() -> Path:
    return Path(user_data_dir("ctxpane", appauthor=False)) / "prompts.jsonl"


class PromptHistory:
    def __init__(self, path: Path | None = None) -> None:
        self.path = path or history_file()
        self._prompts: list[Prompt] | None = None  # read on first use, oldest first
        self._new: list[Prompt] = []  # added since the last write: what this app adds to the file
        self._secrets: set[str] = set()  # every key seen so far: the file's older lines are masked against them too
        self.problem = ""  # why the file could not be read or written ("" when it could)
        self._lock = threading.Lock()  # guards the lists above; never held while the file is written
        self._writing = threading.Lock()  # one write at a time in this app
        self._unreadable = False  # the file is there but could not be read: never written over

    def prompts(self) -> list[Prompt]:
        with self._lock:
            if self._prompts is None:
                self._prompts = self._read()
            return self._prompts

    def add(self, text: str, session: str, secrets: Iterable[str] = ()) -> bool:
        """Remember `text` with every key masked: `secrets` (the connection's) and every key the process holds
        (in memory; `write` puts it in the file). False if it is not kept."""
        if not text.strip() or len(text) > MAX_PROMPT:
            return False
        known = {*secrets, *held_keys()}
        prompt = Prompt(known_secrets_masked(text, known), session[:64])
        self.prompts()
        with self._lock:
            self._secrets |= known
            self._new = merged(self._new, [prompt])
            self._prompts = merged(self._prompts or [], [prompt])
        return True

    def write(self) -> None:
        """This app's new prompts added to the file as it is now (a worker thread calls this: the file may be
        large). Under the lock another app's write waits, so neither loses the other's prompts."""
        with self._writing:
            with self._lock:
                new, self._new, secrets = self._new, [], set(self._secrets)
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with _locked(self.path):
                    written = self._write_merged(new, secrets)
            except OSError as exc:
                written = None
                self.problem = f"prompt history not saved: {exc.strerror or exc}"
            with self._lock:
                if written is None:  # kept for the next write
                    self._new = merged(new, self._new)
                else:
                    self._prompts, self.problem = merged(written, self._new), ""

    def _write_merged(self, new: list[Prompt], secrets: set[str]) -> list[Prompt] | None:
        """Read the file, add `new`, write it back; what it now holds (None when it was not written)."""
        there = self._read()
        if self._unreadable:  # what is there may be someone's whole history: said, and left alone
            self.problem = f"prompt history not saved: {self.path} could not be read, so it is not written over"
            return None
        redactor = Redactor(secrets)  # a line an older version wrote with a key whole in it
        there = [Prompt(redactor.text(p.text), p.session) for p in there]
        prompts = merged(there, new)
        write_atomic(self.path, "".join(json.dumps({"text": p.text, "session": p.session}, ensure_ascii=False)
                                        + "\n" for p in prompts))
        return prompts

    def _read(self) -> list[Prompt]:
        self._unreadable = False
        try:
            raw = read_regular_file(self.path, MAX_FILE)
        except SessionFileError as exc:
            if self.path.exists() or os.path.islink(self.path):
                self.problem, self._unreadable = str(exc), True
            return []
        prompts = [prompt for line in raw.decode("utf-8", "replace").splitlines() if (prompt := _prompt(line))]
        return prompts[-MAX_KEPT:]


def _prompt(line: str) -> Prompt | None:
    if len(line) > MAX_LINE:
        return None
    try:
        data = json.loads(line)
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("text"), str) or len(data["text"]) > MAX_PROMPT:
        return None
    session = data.get("session")
    return Prompt(data["text"], session[:64] if isinstance(session, str) else "")


def merged(older: list[Prompt], newer: list[Prompt]) -> list[Prompt]:
    """`newer` after `older`, each text once (a repeat moves to the newest), within the bounds: the newest MAX_KEPT
    prompts, MAX_KEPT_CHARS characters in all, the oldest dropped first."""
    latest: dict[str, Prompt] = {}  # each text of `newer` where it was last sent
    for prompt in newer:
        latest.pop(prompt.text, None)
        latest[prompt.text] = prompt
    prompts = ([p for p in older if p.text not in latest] + list(latest.values()))[-MAX_KEPT:]
    total = sum(len(p.text) for p in prompts)
    drop = 0
    while total > MAX_KEPT_CHARS:
        total -= len(prompts[drop].text)
        drop += 1
    return prompts[drop:]


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold the lock on `path`'s sibling `.lock` file (not on `path` itself: a write replaces that file, and a
    lock on the replaced one would lock nothing). Raises OSError when another app holds it past LOCK_WAIT."""
    fd = os.open(path.with_name(path.name + ".lock"), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        deadline = time.monotonic() + LOCK_WAIT
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise OSError(f"{path} is being written by another ctxpane (its lock was held "
                                  f"{LOCK_WAIT:g} s)") from None
                time.sleep(0.01)
        yield
    finally:
        os.close(fd)  # closing the file lets the lock go
