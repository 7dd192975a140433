"""The packages listed in pyproject.toml's [tool.mypy] `files` pass mypy, strict, as part of the suite, and the check
can fail."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from conftest import ROOT


def mypy(root: Path, cache: Path) -> subprocess.CompletedProcess:
    # The configuration is the one in root's pyproject.toml; the cache is the test's own (nothing is written to
    # the repository, and two runs at once share nothing).
    return subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(cache)], cwd=root, capture_output=True,
                          text=True, timeout=300)


def test_the_configured_packages_pass_mypy_strict(tmp_path):
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert config["strict"] is True and {"tui/context", "tui/client", "tui/controller", "tui/sessions"} <= set(config["files"]), config
    result = mypy(ROOT, tmp_path / "cache")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Success: no issues found" in result.stdout, result.stdout


def test_an_untyped_function_and_a_wrong_type_are_found(tmp_path):
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    planted = tmp_path / "tui" / "context" / "formats"  # a package added later under a checked one is checked too
    planted.mkdir(parents=True)
    for package in (tmp_path / "tui", tmp_path / "tui" / "context", planted):
        (package / "__init__.py").write_text("")
    for checked in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]["files"]:
        (tmp_path / checked).mkdir(parents=True, exist_ok=True)  # every checked package, empty but the planted
        (tmp_path / checked / "__init__.py").write_text("")
    (planted / "planted.py").write_text("def untyped(x):\n    return x\n\n\n"
                                        "def wrong() -> int:\n    return 'text'\n\n\n"
                                        "def bare(values: dict) -> None:\n    pass\n")
    result = mypy(tmp_path, tmp_path / "cache")
    assert result.returncode == 1 and "tui/context/formats/planted.py" in result.stdout, result.stdout + result.stderr
    for code in ("no-untyped-def", "return-value", "type-arg"):
        assert f"[{code}]" in result.stdout, result.stdout
