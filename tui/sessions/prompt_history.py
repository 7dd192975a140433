"""What the user sent, across sessions: the prompt history Up/Down and Ctrl+R recall from.

One JSON line per prompt in $XDG_DATA_HOME/ctxpane/prompts.jsonl, private (0600) like a session. The file is
outside input when read back: a line that is not a small JSON object with a text is skipped, the file is read
only up to its size limit, and only the newest MAX_KEPT prompts are kept when it is written again.
A prompt that holds an API key is never written (the session keeps it, as typed; this file never does).
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from platformdirs import user_data_dir

from tui.sessions.safe_io import SessionFileError, read_regular_file, write_atomic

MAX_KEPT = 1000  # prompts kept across sessions
MAX_PROMPT = 20_000  # characters: a longer message (a pasted file) is not a prompt to recall
MAX_KEPT_CHARS = 2_000_000  # all prompts together: the oldest go first past it
MAX_LINE = 6 * MAX_PROMPT + 200  # a prompt's line: JSON writes a control character as six (\u001b)
MAX_FILE = 6 * MAX_KEPT_CHARS + 200 * MAX_KEPT  # bytes read at most: what the limits above can write


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
        self.problem = ""  # why the file could not be read or written ("" when it could)
        self._lock = threading.Lock()  # one write at a time; each writes the newest list there is
        self._unreadable = False  # the file is there but could not be read: never written over

    def prompts(self) -> list[Prompt]:
        with self._lock:
            if self._prompts is None:
                self._prompts = self._read()
            return self._prompts

    def add(self, text: str, session: str, secrets: Iterable[str] = ()) -> bool:
        """Remember `text` (in memory; `write` puts it in the file). False if it is not kept."""
        if not text.strip() or len(text) > MAX_PROMPT or any(s and s in text for s in secrets):
            return False
        prompts = [p for p in self.prompts() if p.text != text][-(MAX_KEPT - 1):]
        prompts.append(Prompt(text, session[:64]))
        while sum(len(p.text) for p in prompts) > MAX_KEPT_CHARS:
            prompts.pop(0)
        self._prompts = prompts
        return True

    def write(self) -> None:
        """The newest list to the file (a worker thread calls this: the file may be large)."""
        with self._lock:
            if self._unreadable:  # what is there may be someone's whole history: said, and left alone
                self.problem = f"prompt history not saved: {self.path} could not be read, so it is not written over"
                return
            lines = "".join(json.dumps({"text": p.text, "session": p.session}, ensure_ascii=False) + "\n"
                            for p in self._prompts or ())
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                write_atomic(self.path, lines)
                self.problem = ""
            except OSError as exc:
                self.problem = f"prompt history not saved: {exc.strerror or exc}"

    def _read(self) -> list[Prompt]:
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
