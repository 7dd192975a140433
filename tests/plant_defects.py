"""Plant one-line defects and see whether the tests that guard that code catch each.

    .venv/bin/python tests/plant_defects.py [--group TEXT] [--only N] [--check] [--list] [-v]

The defects live in tests/defect_catalogue.py, in groups (policy/cache/fences; attribution and
visible(); the client's parser, key scoping and redaction; the session files; the template sandbox;
the app's way to the screen), each with the tests that must catch them (an entry may name its own
tests instead). Each defect is applied to a copy of the project in a temporary folder (the working
tree is never touched), its tests run there, and the defect counts as caught when they fail. Each
group first runs on the untouched code: a red baseline would count every defect as caught.

Each run of pytest has a per-test timeout (--timeout, 60 s; the suite's own is 300 s), so a planted
hang fails within about a minute, and a data size limit (--memory-gb, 4 GiB), so a planted defect that
reads without bound (a session naming file:/dev/zero) ends in MemoryError rather than in the kernel's
out-of-memory killer, which may pick any process of the machine.

A defect whose text is no longer found exactly once in the source (the code moved on) is reported as
NOT APPLIED and counted apart: it says nothing about the tests until it is rewritten for the new code.
`--check` only reports which defects apply, without running any test.

Written down before the first run of the first group, the defects expected to ESCAPE:
  7  ties broken the other way (>=): no test put a unit exactly at the remaining room
  18 '|' left out of the look-alikes: '‹|im_start|›' no longer parses as a header anyway
  21 case-insensitive escaping off: the random fragments are all upper-case [INST]
Written down before the first run of the template sandbox group:
  2  the interrupt not cleared at disarm: only a render ending within a poll of its deadline shows it
  8  the replace filter unsized: its result is still checked after it was built
  10 format_map unsandboxed: no test calls format_map
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from defect_catalogue import GROUPS  # noqa: E402

RUN_TIMEOUT = 900  # seconds for one run of pytest; a run that takes longer counts as a failure (caught)
TEST_TIMEOUT = 60  # seconds per test (pytest-timeout; the suite's own is 300): a planted hang fails sooner
MEMORY_GB = 4  # RLIMIT_DATA of each pytest run: a planted defect that reads /dev/zero ends in MemoryError


def occurrences(tree: Path, path: str, old: str) -> int:
    target = tree / path
    return target.read_text(encoding="utf-8").count(old) if target.is_file() else -1


def apply(tree: Path, path: str, old: str, new: str) -> None:
    target = tree / path
    text = target.read_text(encoding="utf-8")
    if text.count(old) != 1:
        raise RuntimeError(f"defect does not apply once to {path}: {old!r} found {text.count(old)} times")
    target.write_text(text.replace(old, new), encoding="utf-8")


def tests_of(group_tests: list[str], defect: tuple) -> list[str]:
    return list(defect[4]) if len(defect) > 4 and defect[4] else group_tests


def limit_memory(gigabytes: float) -> None:
    import resource

    size = int(gigabytes * (1 << 30))
    resource.setrlimit(resource.RLIMIT_DATA, (size, size))


def run_one(tests: list[str], defect: tuple | None, timeout: int = TEST_TIMEOUT,
            memory_gb: float = MEMORY_GB) -> tuple[bool, str]:
    """(True when the tests fail, the last lines of their output). `defect` None: untouched code."""
    with tempfile.TemporaryDirectory(prefix="ctxpane-defect-") as folder:
        tree = Path(folder)
        shutil.copytree(ROOT / "tui", tree / "tui", ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copytree(ROOT / "tests", tree / "tests", ignore=shutil.ignore_patterns("benchmarks", "__pycache__"))
        for name in ("pyproject.toml", "sample_sessions", "themes"):
            source = ROOT / name
            (shutil.copytree if source.is_dir() else shutil.copy)(source, tree / name)
        if defect is not None:
            apply(tree, *defect[:3])
        command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-m", "not server",
                   f"--timeout={timeout}", *tests]
        try:
            result = subprocess.run(command, cwd=tree, capture_output=True, text=True, timeout=RUN_TIMEOUT,
                                    env={**os.environ, "PYTHONPATH": str(tree)},
                                    preexec_fn=(lambda: limit_memory(memory_gb)) if memory_gb else None)
        except subprocess.TimeoutExpired:
            return True, f"pytest ran past {RUN_TIMEOUT} s"
        lines = result.stdout.strip().splitlines() or [""]
        failed = [line for line in lines if line.startswith(("FAILED ", "ERROR "))]
        if result.returncode < 0:  # killed by a signal: say so rather than show a line of dots
            return True, f"pytest killed by signal {-result.returncode}"
        return result.returncode != 0, (failed[0] if failed else lines[-1])[:160]


def run_group(name: str, only: int | None, check: bool, verbose: bool = False, **limits: float) -> dict:
    tests, defects = GROUPS[name]
    chosen = [(i, d) for i, d in enumerate(defects, start=1) if only is None or i == only]
    report = {"name": name, "entries": len(chosen), "applied": [], "caught": [], "escaped": [],
              "not_applied": [], "seconds": 0.0}
    started = time.monotonic()
    print(f"\n== {name} ({len(defects)} defects; tests: {' '.join(tests)})", flush=True)
    applicable = []
    for index, defect in chosen:
        found = occurrences(ROOT, defect[0], defect[1])
        if found != 1:
            report["not_applied"].append((index, defect[3]))
            where = "file missing" if found < 0 else f"found {found} times"
            print(f"{index:2d} NOT APPLIED ({defect[0]}: {where}) {defect[3]}", flush=True)
        else:
            applicable.append((index, defect))
            report["applied"].append((index, defect[3]))
            if check:
                print(f"{index:2d} applies     {defect[3]}", flush=True)
    if check or not applicable:
        report["seconds"] = time.monotonic() - started
        return report
    baseline = sorted({t for _, d in applicable for t in tests_of(tests, d)} | set(tests))
    red, tail = run_one(baseline, None, **limits)
    if red:
        raise SystemExit(f"the tests of '{name}' fail without any defect ({tail}): fix them first")
    for index, defect in applicable:
        began = time.monotonic()
        hit, tail = run_one(tests_of(tests, defect), defect, **limits)
        (report["caught"] if hit else report["escaped"]).append((index, defect[3]))
        print(f"{index:2d} {'caught ' if hit else 'ESCAPED'} {time.monotonic() - began:5.1f}s  {defect[3]}"
              + (f"\n      {tail}" if verbose or not hit else ""), flush=True)
    report["seconds"] = time.monotonic() - started
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description="Plant the defects of tests/defect_catalogue.py one at a time "
                                     "in a copy of the project and report which the tests catch.")
    parser.add_argument("--group", default="", help="run the groups whose name contains this text")
    parser.add_argument("--only", type=int, default=None, help="run only defect N of each chosen group")
    parser.add_argument("--check", action="store_true", help="only report which defects still apply; run no test")
    parser.add_argument("--list", action="store_true", help="list the groups and their defects, then stop")
    parser.add_argument("--verbose", "-v", action="store_true", help="show the first failing test of each caught defect")
    parser.add_argument("--timeout", type=int, default=TEST_TIMEOUT,
                        help=f"seconds per test in each run (default {TEST_TIMEOUT}; the suite's own is 300)")
    parser.add_argument("--memory-gb", type=float, default=MEMORY_GB,
                        help=f"data size limit of each pytest run in GiB (default {MEMORY_GB}; 0: none)")
    args = parser.parse_args()
    names = [name for name in GROUPS if args.group.lower() in name.lower()]
    if not names:
        print(f"no group name contains {args.group!r}; groups: " + "; ".join(GROUPS), file=sys.stderr)
        return 2
    if args.list:
        for name in names:
            tests, defects = GROUPS[name]
            print(f"{name} (tests: {' '.join(tests)})")
            for index, defect in enumerate(defects, start=1):
                print(f"  {index:2d} {defect[0]}: {defect[3]}")
        return 0
    started = time.monotonic()
    reports = [run_group(name, args.only, args.check, args.verbose, timeout=args.timeout, memory_gb=args.memory_gb)
               for name in names]
    print(f"\n{'group':<68} {'entries':>7} {'applied':>7} {'caught':>6} {'escaped':>7} {'seconds':>7}")
    for r in reports:
        print(f"{r['name']:<68} {r['entries']:>7} {len(r['applied']):>7} {len(r['caught']):>6} "
              f"{len(r['escaped']):>7} {r['seconds']:>7.0f}")
    for r in reports:
        for label, key in (("escaped", "escaped"), ("NOT APPLIED", "not_applied")):
            if r[key]:
                print(f"{r['name']}: {label}: " + ", ".join(f"{i} ({d})" for i, d in r[key]))
    print(f"wall time {time.monotonic() - started:.0f} s")
    return 1 if any(r["not_applied"] for r in reports) else 0


if __name__ == "__main__":
    sys.exit(main())
