"""The layer rules (pyproject.toml, [tool.importlinter]) hold, and a forbidden import breaks them.

tests/test_engine_purity.py checks what is loaded at run time; this checks every import written in
the source, including ones inside functions, with import-linter's `lint-imports`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint(root: Path) -> subprocess.CompletedProcess:
    """`lint-imports` on the `tui` package found under `root`, with the contracts in root/pyproject.toml."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([str(LINT_IMPORTS), "--no-cache", "--config", str(root / "pyproject.toml")], cwd=root,
                          env=env, capture_output=True, text=True, timeout=120)


def test_the_layer_contracts_are_kept():
    result = lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout and " KEPT" in result.stdout


@pytest.fixture
def copy_of_the_source(tmp_path) -> Path:
    """The package's Python files and the contracts, in a folder of their own, to break on purpose."""
    shutil.copytree(ROOT / "tui", tmp_path / "tui", ignore=lambda folder, names: [
        n for n in names if not n.endswith(".py") and not (Path(folder) / n).is_dir() or n == "__pycache__"])
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


BREAKS = {
    "engine imports rich": ("tui/context/cache.py", "import rich.text\n", "imports no UI, terminal or network"),
    "engine imports httpx": ("tui/context/budget.py", "import httpx\n", "imports no UI, terminal or network"),
    "sessions import textual": ("tui/sessions/store.py", "from textual.widget import Widget\n",
                                "do not import Textual"),
    "client imports textual": ("tui/client/reply.py", "import textual\n", "do not import Textual"),
    "controller imports textual, inside a function": (
        "tui/controller/sending.py", "\n\ndef _post():\n    from textual.message import Message\n    return Message\n",
        "The controller (the session's state and transitions) does not import Textual"),
    "controller imports the app": ("tui/controller/snapshot.py", "from tui.app import shown\n",
                                   "Nothing below the app imports the app"),
    "a command imports the app, inside a function": (
        "tui/commands/export.py", "\n\ndef _open_app():\n    from tui.app.app import CtxpaneApp\n    return CtxpaneApp\n",
        "Nothing below the app imports the app"),
    "the engine imports the app": ("tui/context/cache.py", "from tui.app import shown\n",
                                   "Nothing below the app imports the app"),
}


@pytest.mark.parametrize("case", BREAKS)
def test_a_forbidden_import_breaks_its_contract(copy_of_the_source, case):
    relative, line, contract = BREAKS[case]
    target = copy_of_the_source / relative
    source = target.read_text()
    # appended at the end (after any `from __future__`), so the module stays valid Python
    target.write_text(source + ("\n" if not source.endswith("\n") else "") + line)
    result = lint(copy_of_the_source)
    assert result.returncode == 1, result.stdout + result.stderr
    broken = [row for row in result.stdout.splitlines() if row.endswith(" BROKEN")]
    assert any(contract in row for row in broken), result.stdout  # (an import of the app breaks all three)
