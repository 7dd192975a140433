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
