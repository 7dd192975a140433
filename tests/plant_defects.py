"""Plant one-line defects and see whether the tests that guard that code catch each.

    .venv/bin/python tests/plant_defects.py [--group TEXT] [--only N]

The defects live in tests/defect_catalogue.py, in groups (policy/cache/fences; attribution and
visible(); the client's parser, key scoping and redaction; the session files; the template sandbox;
the app's way to the screen), each with the tests that must catch them. Each defect is applied to a
copy of the project in a temporary folder (the working tree is never touched), that group's tests run
there, and the defect counts as caught when they fail. Each group first runs on the untouched code:
a red baseline would count every defect as caught.

Written down before the first run of the first group, the defects expected to ESCAPE:
  7  ties broken the other way (>=): no test put a unit exactly at the remaining room
  18 '|' left out of the look-alikes: '‹|im_start|›' no longer parses as a header anyway
  21 case-insensitive escaping off: the random fragments are all upper-case [INST]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from defect_catalogue import GROUPS  # noqa: E402


def apply(tree: Path, path: str, old: str, new: str) -> None:
    target = tree / path
    text = target.read_text(encoding="utf-8")
    if text.count(old) != 1:
        raise SystemExit(f"defect does not apply once to {path}: {old!r} found {text.count(old)} times")
    target.write_text(text.replace(old, new), encoding="utf-8")


def run_one(tests: list[str], defect: tuple | None) -> bool:
    """True when the tests fail. `defect` None runs the untouched code: the baseline must pass."""
    with tempfile.TemporaryDirectory(prefix="ctxpane-defect-") as folder:
        tree = Path(folder)
        shutil.copytree(ROOT / "tui", tree / "tui")
        shutil.copytree(ROOT / "tests", tree / "tests", ignore=shutil.ignore_patterns("benchmarks", "__pycache__"))
        for name in ("pyproject.toml", "sample_sessions", "themes"):
            source = ROOT / name
            (shutil.copytree if source.is_dir() else shutil.copy)(source, tree / name)
        if defect is not None:
            apply(tree, *defect[:3])
        result = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
                                 "-m", "not server", *tests], cwd=tree, capture_output=True, text=True,
                                env={**os.environ, "PYTHONPATH": str(tree)})
        return result.returncode != 0


def run_group(name: str, only: int | None) -> tuple[list, list]:
    tests, defects = GROUPS[name]
    print(f"\n== {name} ({len(defects)} defects; tests: {' '.join(tests)})", flush=True)
    if run_one(tests, None):
        raise SystemExit(f"the tests of '{name}' fail without any defect: fix them first")
    caught, escaped = [], []
    for index, defect in enumerate(defects, start=1):
        if only is not None and index != only:
            continue
        hit = run_one(tests, defect)
        (caught if hit else escaped).append((index, defect[3]))
        print(f"{index:2d} {'caught ' if hit else 'ESCAPED'} {defect[3]}", flush=True)
    return caught, escaped


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--group", default="", help="run the groups whose name contains this text")
    parser.add_argument("--only", type=int, default=None, help="run only defect N of each chosen group")
    args = parser.parse_args()
    totals = []
    for name in GROUPS:
        if args.group.lower() in name.lower():
            caught, escaped = run_group(name, args.only)
            totals.append((name, caught, escaped))
    print()
    for name, caught, escaped in totals:
        print(f"{name}: caught {len(caught)}, escaped {len(escaped)}"
              + (": " + ", ".join(f"{i} ({d})" for i, d in escaped) if escaped else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
