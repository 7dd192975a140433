"""What the first frame waits for before anything is drawn: `python -X importtime -c "import tui.app.app"` against
a minimal Textual app's imports (textual.app and its widgets), in the same run, median of several runs, with the
load printed. Lists the heavy modules on that path (the engine, the controller, the HTTP client, msgspec, Jinja,
Markdown, tokenizers) with what each costs, so a module that creeps in is seen, and names the goal: the first
frame imports only what it draws.

    .venv/bin/python -m tests.benchmarks.bench_imports [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

APP = "import tui.app.app"
MINIMAL = "import textual.app, textual.widgets"  # (textual.widgets loads its widgets lazily)
HEAVY = ("tui.context", "tui.controller", "tui.client", "tui.sessions", "msgspec", "httpx", "jinja2", "tiktoken",
         "tokenizers", "markdown_it", "textual.widgets._markdown", "rich.markdown", "sqlite3")
GOAL = 1.3  # the first frame's imports at most this many times a minimal app's


def import_times(statement: str) -> dict[str, tuple[int, int]]:
    """Each module's own and cumulative import time in microseconds, for one fresh interpreter."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", statement], capture_output=True, text=True,
                          check=True)
    times: dict[str, tuple[int, int]] = {}
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line or "cumulative" in line:
            continue
        own, cumulative, name = (part.strip() for part in line[len("import time:"):].split("|"))
        times.setdefault(name, (int(own), int(cumulative)))
    return times


def top_level_total(times: dict[str, tuple[int, int]], statement: str) -> int:
    """The time of the statement's own imports (their cumulative figures, which include everything below)."""
    names = [name.strip() for name in statement.removeprefix("import ").split(",")]
    return sum(times.get(name, (0, 0))[1] for name in names)


def group_time(times: dict[str, tuple[int, int]], prefix: str) -> int | None:
    """The own time of every module of `prefix` (itself and below it), wherever on the path it was imported."""
    own = [t[0] for name, t in times.items() if name == prefix or name.startswith(prefix + ".")]
    return sum(own) if own else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {runs} runs each, medians")
    app_runs = [import_times(APP) for _ in range(runs)]
    minimal_runs = [import_times(MINIMAL) for _ in range(runs)]
    app_ms = statistics.median(top_level_total(t, APP) for t in app_runs) / 1000
    minimal_ms = statistics.median(top_level_total(t, MINIMAL) for t in minimal_runs) / 1000
    ratio = app_ms / minimal_ms
    print(f"import tui.app.app {app_ms:.0f} ms | minimal Textual app {minimal_ms:.0f} ms | ratio {ratio:.2f}x "
          f"(goal <= {GOAL}x: {'met' if ratio <= GOAL else 'missed'})")
    print("heavy modules on the first frame's path (their own import time, all submodules, ms, median):")
    for name in HEAVY:
        figures = [found for t in app_runs if (found := group_time(t, name)) is not None]
        if figures:
            print(f"  {name:28} {statistics.median(figures) / 1000:8.1f}")


if __name__ == "__main__":
    main()
