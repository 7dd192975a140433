"""Run ctxpane in a real terminal (tmux): type with send-keys, read the screen with capture-pane."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


class Tmux:
    def __init__(self, home: Path, width: int = 160, height: int = 45):
        if shutil.which("tmux") is None:
            pytest.fail("tmux is needed for end-to-end tests (apt-get install tmux)")
        self.name = f"ctxpane-{uuid.uuid4().hex[:8]}"
        self.home, self.width, self.height = home, width, height
        self.env = {"XDG_DATA_HOME": str(home / "data"), "XDG_CONFIG_HOME": str(home / "config"),
                    "XDG_CACHE_HOME": str(home / "cache"), "TERM": "xterm-256color", "COLORTERM": "truecolor"}

    def start(self, *args: str, secrets: dict[str, str] | None = None) -> None:
        """Run ctxpane with `args`. `secrets` (a key) reach it through the tmux server's environment, never the
        command line (which `ps` shows)."""
        exports = " ".join(f"{key}={value}" for key, value in self.env.items())
        command = f"cd {ROOT} && env -u OPENAI_BASE_URL -u OPENAI_API_KEY -u COLUMNS -u LINES {exports} {sys.executable} -m tui {' '.join(args)}"
        subprocess.run(["tmux", "-L", self.name, "new-session", "-d", "-s", self.name, "-x", str(self.width), "-y", str(self.height),
                        command], check=True, env={**os.environ, **(secrets or {})})

    def keys(self, *keys: str, literal: bool = False) -> None:
        subprocess.run(["tmux", "-L", self.name, "send-keys", "-t", self.name, *(["-l"] if literal else []), *keys], check=True)

    def screen(self) -> str:
        result = subprocess.run(["tmux", "-L", self.name, "capture-pane", "-p", "-t", self.name], capture_output=True, text=True)
        return result.stdout

    def wait_for(self, pattern: str, timeout: float = 30.0) -> re.Match:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            match = re.search(pattern, self.screen())
            if match:
                return match
            time.sleep(0.1)
        raise AssertionError(f"{pattern!r} never appeared; screen:\n{self.screen()}")

    def pid(self) -> int:
        out = subprocess.run(["tmux", "-L", self.name, "list-panes", "-t", self.name, "-F", "#{pane_pid}"], capture_output=True,
                             text=True).stdout.split()
        shell = int(out[0])
        children = subprocess.run(["pgrep", "-P", str(shell)], capture_output=True, text=True).stdout.split()
        return int(children[0]) if children else shell

    def stop(self) -> None:
        subprocess.run(["tmux", "-L", self.name, "kill-server"], capture_output=True)

    def sessions(self) -> list[Path]:
        return sorted((self.home / "data" / "ctxpane" / "sessions").glob("*.ctxpane.json"))
