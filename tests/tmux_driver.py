"""Run ctxpane in a real terminal (tmux): type with send-keys, read the screen with capture-pane."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from session_files import session_data
from waiting import until

ROOT = Path(__file__).resolve().parent.parent


class Tmux:
    def __init__(self, home: Path, width: int = 160, height: int = 45, program: str | None = None,
                 folder: Path = ROOT):
        """`program`: the command that starts ctxpane (default: this interpreter's `-m tui`, from the checkout), run
        in `folder` (an installed `ctxpane` is started from outside the checkout)."""
        if shutil.which("tmux") is None:
            pytest.fail("tmux is needed for end-to-end tests (apt-get install tmux)")
        self.name = f"ctxpane-{uuid.uuid4().hex[:8]}"
        self.home, self.width, self.height = home, width, height
        self.program, self.folder = program or f"{sys.executable} -m tui", folder
        self.env = {"XDG_DATA_HOME": str(home / "data"), "XDG_CONFIG_HOME": str(home / "config"),
                    "XDG_CACHE_HOME": str(home / "cache"), "TERM": "xterm-256color", "COLORTERM": "truecolor"}

    def start(self, *args: str, secrets: dict[str, str] | None = None) -> None:
        """Run ctxpane with `args`. `secrets` (a key) reach it through the tmux server's environment, never the
        command line (which `ps` shows).

        Unless the test wrote a config.toml of its own, the replies are sampled at a fixed seed: at a random one the
        tiny test model now and then ends a reply at once, and a reply with no text adds no message."""
        config = self.home / "config" / "ctxpane" / "config.toml"
        if not config.exists():
            config.parent.mkdir(parents=True, exist_ok=True)
            config.write_text("[params]\nseed = 7\n")
        exports = " ".join(f"{key}={value}" for key, value in self.env.items())
        command = (f"cd {self.folder} && env -u OPENAI_BASE_URL -u OPENAI_API_KEY -u COLUMNS -u LINES -u PYTHONPATH "
                   f"{exports} {self.program} {' '.join(args)}")
        subprocess.run(["tmux", "-L", self.name, "new-session", "-d", "-s", self.name, "-x", str(self.width), "-y", str(self.height),
                        command], check=True, env={**os.environ, **(secrets or {})})

    def keys(self, *keys: str, literal: bool = False) -> None:
        subprocess.run(["tmux", "-L", self.name, "send-keys", "-t", self.name, *(["-l"] if literal else []), *keys], check=True)

    def screen(self) -> str:
        result = subprocess.run(["tmux", "-L", self.name, "capture-pane", "-p", "-t", self.name], capture_output=True, text=True)
        return result.stdout

    def wait_for(self, pattern: str, timeout: float = 30.0) -> re.Match:
        """The first match of `pattern` on the screen, once it is there."""
        return until(lambda: re.search(pattern, self.screen()), timeout,
                     lambda: f"{pattern!r} on the screen:\n{self.screen()}", poll=0.05)

    def wait_for_all(self, *patterns: str, timeout: float = 30.0) -> list[re.Match]:
        """A match of each pattern on one and the same screen (one frame): e.g. a draft and the count made of it."""
        def matched():
            screen = self.screen()
            found = [re.search(pattern, screen) for pattern in patterns]
            return found if all(found) else None
        return until(matched, timeout, lambda: f"{patterns!r} on one screen:\n{self.screen()}", poll=0.05)

    def wait_gone(self, text: str, timeout: float = 10.0) -> None:
        until(lambda: text not in self.screen(), timeout, lambda: f"{text!r} to leave the screen:\n{self.screen()}",
              poll=0.05)

    def pid(self) -> int:
        out = subprocess.run(["tmux", "-L", self.name, "list-panes", "-t", self.name, "-F", "#{pane_pid}"], capture_output=True,
                             text=True).stdout.split()
        shell = int(out[0])
        children = subprocess.run(["pgrep", "-P", str(shell)], capture_output=True, text=True).stdout.split()
        return int(children[0]) if children else shell

    def kill(self, sig: int) -> None:
        """Send ctxpane `sig` and wait until it has ended (gone, or a zombie its shell has not reaped yet)."""
        pid = self.pid()
        os.kill(pid, sig)

        def ended() -> bool:
            try:
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):
                return True
            return state in ("Z", "X")
        until(ended, 10, f"process {pid} to end after signal {sig}")

    def running(self) -> bool:
        """ctxpane still runs (its tmux session ends with it)."""
        return subprocess.run(["tmux", "-L", self.name, "has-session", "-t", self.name], capture_output=True).returncode == 0

    def wait_exit(self, timeout: float = 30.0) -> None:
        """Wait until ctxpane has quit (what it saves on the way out is written by then)."""
        until(lambda: not self.running(), timeout, lambda: f"ctxpane to quit:\n{self.screen()}", poll=0.05)

    def stop(self) -> None:
        subprocess.run(["tmux", "-L", self.name, "kill-server"], capture_output=True)

    def sessions(self) -> list[Path]:
        return sorted((self.home / "data" / "ctxpane" / "sessions").glob("*.ctxpane.json"))

    def saved(self, check, timeout: float = 10.0, what: str = "a saved session that passes the check") -> dict:
        """The readable JSON (tests/session_files.py) of a session file that passes `check`, once one does (the autosave comes when the load lets it)."""
        def found() -> dict | None:
            for path in self.sessions():
                try:
                    raw = session_data(path)
                except (OSError, ValueError):  # not written yet
                    continue
                if check(raw):
                    return raw
            return None
        return until(found, timeout, lambda: f"{what}: {self.sessions()}\n{self.screen()}", poll=0.1)
