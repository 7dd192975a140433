"""In a real terminal (tmux): spawn to first frame, memory at start, and keystroke to screen.

    .venv/bin/python -m tests.benchmarks.bench_terminal [RUNS]

First frame: from spawning `ctxpane` to its first screen being visible in tmux (polled every
5 ms), next to a minimal Textual app measured the same way in the same run. Memory: the peak
resident size (VmHWM) when the first frame is visible, before tokenizers and servers load.
Keystroke: send one key and poll until the document pane shows it, with sessions of 10k, 100k
and 500k tokens open.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from tests.benchmarks.corpus import conversation
from tui.context.messages import message_from_dict
from tui.sessions.model import Session
from tui.sessions.store import save_session

MINIMAL_APP = """
from textual.app import App
from textual.widgets import Static
class Minimal(App):
    def compose(self):
        yield Static("MINIMAL-READY")
Minimal().run()
"""


class Term:
    def __init__(self, home: Path):
        self.name = f"bench-{uuid.uuid4().hex[:8]}"
        self.home = home

    def run(self, command: str) -> float:
        env = (f"env -u COLUMNS -u LINES XDG_DATA_HOME={self.home}/data XDG_CONFIG_HOME={self.home}/config "
               f"TERM=xterm-256color")
        started = time.perf_counter()
        subprocess.run(["tmux", "-L", self.name, "new-session", "-d", "-s", self.name, "-x", "160", "-y", "45",
                        f"{env} {command}"], check=True)
        return started

    def screen(self) -> str:
        return subprocess.run(["tmux", "-L", self.name, "capture-pane", "-p", "-t", self.name],
                              capture_output=True, text=True).stdout

    def wait(self, needle: str, timeout: float = 30) -> float:
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            if needle in self.screen():
                return time.perf_counter()
            time.sleep(0.005)
        raise RuntimeError(f"{needle!r} never appeared:\n{self.screen()}")

    def wait_in_pane(self, needle: str, timeout: float = 30) -> float:
        """Wait until `needle` shows right of the chat/pane border (the pane, not the composer)."""
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            for line in self.screen().splitlines():
                border = line.find("│")
                if border >= 0 and needle in line[border:]:
                    return time.perf_counter()
            time.sleep(0.005)
        raise RuntimeError(f"{needle!r} never appeared in the pane:\n{self.screen()}")

    def keys(self, *keys: str) -> None:
        subprocess.run(["tmux", "-L", self.name, "send-keys", "-t", self.name, "-l", *keys], check=True)

    def app_pid(self) -> int:
        shell = subprocess.run(["tmux", "-L", self.name, "list-panes", "-t", self.name, "-F", "#{pane_pid}"],
                               capture_output=True, text=True).stdout.split()[0]
        children = subprocess.run(["pgrep", "-P", shell], capture_output=True, text=True).stdout.split()
        return int(children[0]) if children else int(shell)

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.name, "kill-server"], capture_output=True)


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def first_frame(command: str, needle: str, home: Path) -> tuple[float, float]:
    term = Term(home)
    try:
        started = term.run(command)
        seen = term.wait(needle)
        rss = peak_rss_mib(term.app_pid())
        return (seen - started) * 1000, rss
    finally:
        term.close()


def keystroke(session_file: Path, home: Path, presses: int = 15) -> list[float]:
    term = Term(home)
    samples = []
    try:
        term.run(f"{sys.executable} -m tui {session_file} --no-scan")
        term.wait("Document")
        time.sleep(3)  # tokenizer and first full count done
        for i in range(presses):
            marker = f"Q{i:02d}Z"
            start = time.perf_counter()
            term.keys(marker)
            term.wait_in_pane(marker, timeout=10)
            samples.append((time.perf_counter() - start) * 1000)
            time.sleep(0.6)  # let the settling rebuild run between samples
    finally:
        term.close()
    return samples


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 10
    home = Path(tempfile.mkdtemp(prefix="ctxpane-term-"))
    minimal = home / "minimal.py"
    minimal.write_text(MINIMAL_APP)
    ours = [first_frame(f"{sys.executable} -m tui --no-scan", "Document", home) for _ in range(runs)]
    theirs = [first_frame(f"{sys.executable} {minimal}", "MINIMAL-READY", home) for _ in range(runs)]
    ours_ms, ours_rss = statistics.median(t for t, _ in ours), statistics.median(r for _, r in ours)
    min_ms, min_rss = statistics.median(t for t, _ in theirs), statistics.median(r for _, r in theirs)
    print(f"spawn -> first frame in tmux, median of {runs}: ctxpane {ours_ms:.0f} ms "
          f"[{min(t for t, _ in ours):.0f}-{max(t for t, _ in ours):.0f}], minimal Textual app {min_ms:.0f} ms "
          f"(ratio {ours_ms / min_ms:.2f})")
    print(f"peak RSS at first frame: ctxpane {ours_rss:.0f} MiB, minimal Textual app {min_rss:.0f} MiB")
    if "--startup-only" in sys.argv:
        return
    for size in (10_000, 100_000, 500_000):
        session = Session(title=f"bench {size}", messages=[message_from_dict(m, i)
                                                           for i, m in enumerate(conversation(size))][:-1])
        session.template = {"name": "chatml", "origin": "builtin"}
        session.tokenizer = "o200k_base"
        path = home / f"bench-{size}.ctxpane.json"
        save_session(session, path)
        samples = sorted(keystroke(path, home))
        print(f"{size:>7,} tokens: keystroke -> pane shows it, median {statistics.median(samples):.0f} ms, "
              f"p95 {samples[int(len(samples) * 0.95) - 1]:.0f} ms (tmux polling every 5 ms)")


if __name__ == "__main__":
    main()
