"""In a real terminal (tmux): spawn to first frame, memory at start, and keystroke to screen.

    .venv/bin/python -m tests.benchmarks.bench_terminal [RUNS]

First frame: from spawning `ctxpane` to its first screen being visible in tmux (polled every
5 ms), next to a minimal Textual app measured the same way in the same run. Memory: the peak
resident size (VmHWM) when the first frame is visible, before tokenizers and servers load.
Keystroke: send one key and poll until the document pane shows it, with sessions of 10k, 100k
and 500k tokens open.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from tests.benchmarks.corpus import conversation
from tests.waiting import until
from tui.context.messages import message_from_dict
from tui.sessions.model import Session
from tui.sessions.store import save_session

MINIMAL_APP = """
from textual.app import App
from textual.widgets import Input, Label
class Minimal(App):
    def compose(self):
        yield Input(placeholder="MINIMAL-READY")
        yield Label("", id="echo")
    def on_input_changed(self, event):
        self.query_one("#echo", Label).update(f"ECHO<{event.value}>")
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
        """When `needle` is first seen on the screen (looked for every 5 ms)."""
        until(lambda: needle in self.screen(), timeout, lambda: f"{needle!r} on the screen:\n{self.screen()}",
              poll=0.005)
        return time.perf_counter()

    def wait_in_pane(self, needle: str, timeout: float = 30) -> float:
        """When `needle` is first seen right of the chat/pane border (the pane, not the composer)."""
        def shown() -> bool:
            return any(line.find("│") >= 0 and needle in line[line.find("│"):] for line in self.screen().splitlines())
        until(shown, timeout, lambda: f"{needle!r} in the pane:\n{self.screen()}", poll=0.005)
        return time.perf_counter()

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
        until(lambda: re.search(r"\d[\d,]* tokens (exact|estimate)", term.screen()), 60,  # tokenizer and count done
              lambda: f"the first full count:\n{term.screen()}", poll=0.05)
        for i in range(presses):
            marker = f"Q{i:02d}Z"
            start = time.perf_counter()
            term.keys(marker)
            term.wait_in_pane(marker, timeout=10)
            samples.append((time.perf_counter() - start) * 1000)
            time.sleep(0.6)  # the settling rebuild (0.4 s after the last key) runs between samples: nothing shows it
    finally:
        term.close()
    return samples


def rss_with(session_file: Path, home: Path) -> tuple[float, float]:
    """(resident MiB, peak MiB) of the app once a session is open and fully counted."""
    term = Term(home)
    try:
        term.run(f"{sys.executable} -m tui {session_file} --no-scan")
        term.wait("Document")
        until(lambda: re.search(r"\d[\d,]* tokens (exact|estimate)", term.screen()), 120,
              lambda: f"the first full count:\n{term.screen()}", poll=0.05)
        time.sleep(1.0)  # the settling work after the count
        status = Path(f"/proc/{term.app_pid()}/status").read_text()
        return tuple(int(line.split()[1]) / 1024 for line in status.splitlines()
                     if line.startswith(("VmRSS:", "VmHWM:")))  # type: ignore[return-value]
    finally:
        term.close()


def saved_session(size: int, home: Path) -> Path:
    session = Session(title=f"bench {size}", messages=[message_from_dict(m, i)
                                                       for i, m in enumerate(conversation(size))][:-1])
    session.template = {"name": "chatml", "origin": "builtin"}
    session.tokenizer = "o200k_base"
    path = home / f"bench-{size}.ctxpane.json"
    save_session(session, path)
    return path


def minimal_keystroke(app: Path, home: Path, presses: int = 15) -> list[float]:
    """The baseline: the minimal app (an Input and a Label), keystroke -> the label echoes the input's value."""
    term = Term(home)
    samples = []
    try:
        term.run(f"{sys.executable} {app}")
        term.wait("MINIMAL-READY")
        for i in range(presses):
            marker = f"Q{i:02d}Z"
            start = time.perf_counter()
            term.keys(marker)
            term.wait(f"{marker}>", timeout=10)  # only the label closes the angle bracket
            samples.append((time.perf_counter() - start) * 1000)
            time.sleep(0.6)  # as between ctxpane's samples
    finally:
        term.close()
    return samples


def spread(samples: list[float]) -> tuple[float, float]:
    """Median and p95 of the samples."""
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[max(0, int(len(ordered) * 0.95) - 1)]


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 10
    home = Path(tempfile.mkdtemp(prefix="ctxpane-term-"))
    minimal = home / "minimal.py"
    minimal.write_text(MINIMAL_APP)
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
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
    base_median, base_p95 = spread(minimal_keystroke(minimal, home))
    print(f"minimal Textual app: keystroke -> label echo, median {base_median:.0f} ms, p95 {base_p95:.0f} ms")
    for size in (10_000, 100_000, 500_000):
        median, p95 = spread(keystroke(saved_session(size, home), home))
        print(f"{size:>7,} tokens: keystroke -> pane shows it, median {median:.0f} ms (ratio {median / base_median:.2f}), "
              f"p95 {p95:.0f} ms ({p95 / median:.2f}x its median; tmux polling every 5 ms)")
    resident, peak = rss_with(saved_session(800_000, home), home)
    print(f"800,000 tokens open and counted: RSS {resident:.0f} MiB, peak {peak:.0f} MiB (goal: <= 250 MiB)")


if __name__ == "__main__":
    main()
