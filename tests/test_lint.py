"""The code is checked by ruff (rules in pyproject.toml, [tool.ruff]) as part of the suite, and the check can fail."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

RUFF = Path(sys.executable).with_name("ruff")


def ruff(root: Path, *paths: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(RUFF), "check", "--no-cache", *paths], cwd=root, capture_output=True, text=True,
                          timeout=120)


def test_the_package_and_the_tests_pass_ruff():
    result = ruff(ROOT, "tui", "tests")
    assert result.returncode == 0, result.stdout + result.stderr


def test_an_unused_import_and_a_misspelt_name_are_found(tmp_path):
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "tui").mkdir()
    (tmp_path / "tui" / "planted.py").write_text("import os\n\n\ndef f():\n    return undefined_name\n")
    result = ruff(tmp_path, "tui")
    assert result.returncode == 1 and "F401" in result.stdout and "F821" in result.stdout, result.stdout


CONFLICT_MARKS = ("<<<<<<< ", ">>>>>>> ")  # what a merge leaves around a line both sides changed


def conflict_lines(root: Path) -> list[str]:
    """`file:line` of each merge-conflict mark in the project's tracked files (README and docs included)."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, text=True, timeout=60)
    names = [name for name in listed.stdout.split("\0") if name] if listed.returncode == 0 else \
        [str(path.relative_to(root)) for path in root.rglob("*") if path.is_file()]
    found = []
    for name in sorted(names):
        try:
            lines = (root / name).read_text(encoding="utf-8").splitlines()
        except (UnicodeDecodeError, OSError):
            continue  # binary, or gone from the working tree
        found += [f"{name}:{number}" for number, line in enumerate(lines, 1) if line.startswith(CONFLICT_MARKS)]
    return found


def test_no_file_holds_a_merge_conflict_mark():
    assert conflict_lines(ROOT) == []


def test_a_planted_conflict_mark_is_found(tmp_path):
    (tmp_path / "README.md").write_text("# x\n<<<<<<< HEAD\na\n=======\nb\n>>>>>>> other\n", encoding="utf-8")
    assert conflict_lines(tmp_path) == ["README.md:2", "README.md:6"]
