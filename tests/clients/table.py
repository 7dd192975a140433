"""The client harness's table: one row per client from its last run (tests/test_clients.py writes each row to
the client cache's results/ folder), as Markdown.

    python3 tests/clients/table.py
"""

from __future__ import annotations

import json
import sys
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from install import cache_dir  # noqa: E402  (the one place the cache's folder is decided)

COLUMNS = ("client", "version", "API", "recorded / sent", "counts equal / compared",
           "sessions found / run (conversations)",
           "replies whole", "replay --check", "cuts / compactions", "network", "run")


def cells(row: dict) -> list[str]:
    failed = len(row["failures"])
    return [row["client"], row["version"], row["api"], f"{row['recorded']} / {row['sent']}",
            f"{row['equal']} / {row['compared']}", f"{row.get('sessions_found', '?')} / {row['sessions']} ({row['conversations']})",
            f"{row['whole']} / {row['recorded']}", replay(row),
            f"{row['cuts']} / {row['compactions']}" if row.get("compactions") else "-", network(row),
            f"{failed} failed check{'s' * (failed != 1)}" if failed else "all checks pass"]


def replay(row: dict) -> str:
    if not row["conversations"]:
        return "no files"  # nothing recorded: nothing to check, not a pass
    return f"fails for {row['replay_failed']}" if row["replay_failed"] else "passes"


def network(row: dict) -> str:
    """Where the client went: loopback only (traced), and the outside hosts it asked the refusing proxy for."""
    went = "not traced" if not row.get("traced") else \
        f"reached {', '.join(row['outside'])}" if row["outside"] else "loopback only"
    asked = row.get("asked") or []
    return went + (f"; asked for {', '.join(asked)} (refused)" if asked else "")


def main() -> int:
    folder = cache_dir() / "results"
    rows = [json.loads(path.read_text(encoding="utf-8")) for path in sorted(folder.glob("*.json"))]
    if not rows:
        print(f"no results in {folder}: run `python -m pytest -m clients` first", file=sys.stderr)
        return 1
    print("| " + " | ".join(COLUMNS) + " |")
    print("|" + "---|" * len(COLUMNS))
    for row in sorted(rows, key=lambda row: row["client"].lower()):
        print("| " + " | ".join(cells(row)) + " |")
    newest = max(path.stat().st_mtime for path in folder.glob("*.json"))
    print(f"\n(rows from {folder}, the newest written {datetime.fromtimestamp(newest, timezone.utc):%Y-%m-%d %H:%M} UTC)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
