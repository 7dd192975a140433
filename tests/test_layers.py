"""The layer rules and the no-cycle rule (pyproject.toml, [tool.importlinter]) hold, and breaking one is seen.

tests/test_engine_purity.py checks what is loaded at run time; this checks every import written in
the source, including ones inside functions, with import-linter's `lint-imports`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import grimp
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
    "engine imports rich": ("tui/context/cache/prefix.py", "import rich.text\n", "imports no UI, terminal or network"),
    "engine imports httpx": ("tui/context/policy/truncation.py", "import httpx\n", "imports no UI, terminal or network"),
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
    "the engine imports the app": ("tui/context/cache/prefix.py", "from tui.app import shown\n",
                                   "Nothing below the app imports the app"),
}


def plant(root: Path, relative: str, line: str) -> None:
    """`line` appended at the end (after any `from __future__`), so the module stays valid Python."""
    target = root / relative
    source = target.read_text()
    target.write_text(source + ("\n" if not source.endswith("\n") else "") + line)


def broken_contracts(result: subprocess.CompletedProcess) -> list[str]:
    """The names of the contracts `lint-imports` reports broken ("NAME BROKEN", then maybe "(N ignored imports)")."""
    assert result.returncode == 1, result.stdout + result.stderr
    return [row.partition(" BROKEN")[0] for row in result.stdout.splitlines()
            if row.endswith(" BROKEN") or " BROKEN (" in row]


@pytest.mark.parametrize("case", BREAKS)
def test_a_forbidden_import_breaks_its_contract(copy_of_the_source, case):
    relative, line, contract = BREAKS[case]
    plant(copy_of_the_source, relative, line)
    result = lint(copy_of_the_source)
    broken = broken_contracts(result)
    assert any(contract in name for name in broken), result.stdout  # (an import of the app breaks all three)


NO_CYCLES = "No import cycles among the subpackages, nor among the modules of a package"
CYCLES = {  # the import planted, and the package whose children it puts in a cycle
    "the cache comparison imports a server model built on it": (
        "tui/context/cache/prefix.py", "from tui.context.cache.providers import ProviderCache\n", "tui.context.cache"),
    "the model families' tables import the templates, which read those tables": (
        "tui/context/families/registry.py", "import tui.context.templates.library\n", "tui.context"),
    "a gateway check imports the doctor, inside a function": (
        "tui/client/doctor/gateway.py", "\n\ndef _report():\n    from tui.client.doctor.server import Report\n    return Report\n",
        "tui.client.doctor"),
    "a type-only import closes a cycle the contract does not list": (
        "tui/sessions/model.py", "\nfrom typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from .parse import convert\n",
        "tui.sessions"),
    "the engine imports the session files, which import the engine": (
        "tui/context/policy/truncation.py", "import tui.sessions.model\n", "tui"),
}


@pytest.mark.parametrize("case", CYCLES)
def test_a_planted_cycle_breaks_the_no_cycle_contract(copy_of_the_source, case):
    relative, line, package = CYCLES[case]
    plant(copy_of_the_source, relative, line)
    result = lint(copy_of_the_source)
    assert broken_contracts(result) == [NO_CYCLES], result.stdout
    assert f"No cycles are allowed in {package}." in result.stdout, result.stdout


def test_no_package_has_an_import_cycle_at_run_time():
    """The contract lets through only the type-only imports it lists; without any TYPE_CHECKING import, and
    with nothing ignored, no package's children import each other in a cycle."""
    graph = grimp.build_graph("tui", cache_dir=None, exclude_type_checking_imports=True)
    packages = sorted(module for module in graph.modules if graph.find_children(module))
    cycles = [cycle for package in packages for cycle in sibling_cycles(graph, package)]
    assert not cycles, "import cycles at run time:\n" + "\n".join(cycles)


def sibling_cycles(graph: grimp.ImportGraph, package: str) -> list[str]:
    """Each cycle among the children of `package`, as a chain of modules, one per import that would break it."""
    depth = package.count(".") + 2

    def child(module: str) -> str:
        return ".".join(module.split(".")[:depth])

    cycles = []
    for importer, imported in sorted(graph.nominate_cycle_breakers(package)):
        back = graph.find_shortest_chain(importer=child(imported), imported=child(importer), as_packages=True) or ()
        if back[:1] == (imported,) and back[-1:] == (importer,):
            cycles.append(" -> ".join((importer, *back)))
        else:  # the way back starts or ends elsewhere in the two children
            cycles.append(f"{importer} -> {imported}, and back: {' -> '.join(back)}")
    return cycles
