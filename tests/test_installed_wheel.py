"""What `pip install .` gives a user, tested from outside the checkout: the wheel built from the source tree,
installed with its dependencies into a fresh venv, run from a folder where nothing of the source tree is on
`sys.path`.

The rest of the suite imports `tui` from the checkout, so a package or data file the wheel leaves out passes
there and breaks for every user. Here the wheel is held to the source tree file by file, every package is imported
from the venv, the CLI runs, and the app and the tap's screen start in a real terminal (tmux).

Not in the default run (it builds and installs, ~1-2 minutes): `python -m pytest -m installed`; `.ci/run` runs it
as a step of its own.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import socket
import subprocess
import sys
import zipfile
from pathlib import Path

import httpx
import pytest

from conftest import ROOT, free_port
from tap_helpers import LoopbackUpstream
from tmux_driver import Tmux

pytestmark = [pytest.mark.installed, pytest.mark.xdist_group("installed")]

NOT_SHIPPED = ("__pycache__", ".pyc", ".pyo")
NEVER_SHIPPED_FOLDERS = {"tests", "docs", ".ci"}  # the folders at the top of a clone that are not the program
LOCAL_SERVER_PORTS = (8080, 11434, 1234, 8000)  # where the app looks for a server when none is named


def source_files(root: Path) -> list[str]:
    """The repository's files as a clone has them (tracked, or new and not ignored), relative to `root`."""
    if (root / ".git").exists() and shutil.which("git"):
        listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=root,
                                capture_output=True, check=True).stdout.decode().split("\0")
        return [name for name in listed if name and (root / name).is_file()]
    skipped = {".git", ".venv", "build", "dist", ".pytest_cache", ".mypy_cache", ".hypothesis", "__pycache__"}
    return [str(path.relative_to(root)) for path in root.rglob("*")
            if path.is_file() and not skipped & set(path.relative_to(root).parts)]


def folders_at_the_top() -> dict[str, str]:
    """setup.py's own word on which top-level folders ship inside the package, and as what: {"themes": "tui/themes"}."""
    tree = ast.parse((ROOT / "setup.py").read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "FOLDERS_AT_THE_TOP" for t in node.targets):
            mapping = ast.literal_eval(node.value)
            return {folder: package.replace(".", "/") for package, folder in mapping.items()}
    raise AssertionError("setup.py has no FOLDERS_AT_THE_TOP")


def expected_in_wheel(files: list[str]) -> set[str]:
    """Where each file of the package's folders lands in the wheel."""
    shipped, expected = folders_at_the_top(), set()
    for name in files:
        if name.endswith(NOT_SHIPPED) or "__pycache__" in name:
            continue
        top, _, rest = name.partition("/")
        if top == "tui":
            expected.add(name)
        elif top in shipped and rest:
            expected.add(f"{shipped[top]}/{rest}")
    return expected


def third_party_imports() -> list[str]:
    """Every library the package imports, at the top of a module or inside a function (imported when first used):
    each must come with the wheel's declared dependencies."""
    found = set()
    for path in (ROOT / "tui").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return sorted(name for name in found if name not in sys.stdlib_module_names and name not in ("tui", "__future__"))


def packages_of(files: set[str]) -> list[str]:
    """Every package (a folder of the wheel's tui/ holding Python) and every module, as dotted names."""
    names = set()
    for name in files:
        if not name.endswith(".py") or name.endswith("__main__.py"):  # __main__ runs the CLI when imported
            continue
        dotted = name[:-3].replace("/", ".")
        names.add(dotted.removesuffix(".__init__"))
    return sorted(names)


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> tuple[Path, list[str]]:
    """A copy of the source tree as a clone has it (no build/ or egg-info of an earlier build to leak in)."""
    copy = tmp_path_factory.mktemp("source")
    files = source_files(ROOT)
    for name in files:
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, copy / name)
    return copy, files


@pytest.fixture(scope="module")
def wheel(source, tmp_path_factory) -> Path:
    copy, _ = source
    out = tmp_path_factory.mktemp("wheel")
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(copy)],
                           capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr[-3000:]
    (path,) = out.glob("ctxpane-*.whl")
    return path


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    """A fresh venv with the wheel installed as `pip install .` installs it (dependencies from the registry)."""
    folder = tmp_path_factory.mktemp("venv") / "v"
    subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True, timeout=300)
    installed = subprocess.run([str(folder / "bin" / "pip"), "install", "-q", str(wheel)], capture_output=True,
                               text=True, timeout=900)
    assert installed.returncode == 0, installed.stderr[-3000:]
    return folder


@pytest.fixture()
def outside(tmp_path) -> Path:
    """A working folder outside the checkout, with ctxpane's own folders in it."""
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    return folder


def user_env(home: Path) -> dict[str, str]:
    """The environment a user's shell gives: none of the checkout on the path, no server or key of this machine."""
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONPATH", "OPENAI_BASE_URL", "OPENAI_API_KEY", "PYTHONHOME")}
    env.update(XDG_DATA_HOME=str(home / "data"), XDG_CONFIG_HOME=str(home / "config"),
               XDG_CACHE_HOME=str(home / "cache"))
    return env


def run(venv: Path, program: str, *args: str, home: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(venv / "bin" / program), *args], capture_output=True, text=True, timeout=120,
                          cwd=str(home), env=user_env(home))


def test_every_folder_at_the_top_of_a_clone_is_shipped_or_said_not_to_be(source):
    _, files = source
    folders = {name.split("/")[0] for name in files if "/" in name}
    unsaid = folders - {"tui"} - set(folders_at_the_top()) - NEVER_SHIPPED_FOLDERS
    assert not unsaid, f"folders neither shipped (setup.py's FOLDERS_AT_THE_TOP) nor said not to be: {unsaid}"


def test_the_wheel_holds_every_file_of_the_source_tree(source, wheel):
    _, files = source
    expected = expected_in_wheel(files)
    with zipfile.ZipFile(wheel) as archive:
        shipped = set(archive.namelist())
    missing = sorted(expected - shipped)
    assert not missing, f"{len(missing)} file(s) of the source tree are not in the wheel: {missing[:20]}"
    assert not [name for name in shipped if name.endswith((".pyc", ".pyo")) or "__pycache__" in name]


def in_venv(venv: Path, outside: Path, script: str) -> dict:
    """The JSON `script` prints, run by the venv's Python from outside the checkout; -I: neither the working folder
    nor PYTHONPATH on sys.path, as for the installed `ctxpane` script."""
    done = subprocess.run([str(venv / "bin" / "python"), "-I", "-c", script], capture_output=True, text=True,
                          timeout=300, cwd=str(outside), env=user_env(outside))
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def importing_each(names: list[str]) -> str:
    """A script that imports each module of `names` and prints those that failed, why, and where tui came from."""
    return ("import importlib, json, sys\n"
            "failed = {}\n"
            f"for name in {names!r}:\n"
            "    try:\n"
            "        importlib.import_module(name)\n"
            "    except Exception as error:\n"
            "        failed[name] = f'{type(error).__name__}: {error}'\n"
            "tui = sys.modules.get('tui')\n"
            "print(json.dumps({'failed': failed, 'tui': getattr(tui, '__file__', None), 'path': sys.path}))\n")


def test_every_package_and_module_imports_from_the_installed_wheel(source, venv, outside):
    _, files = source
    names = packages_of(expected_in_wheel(files))
    assert "tui.context.tools" in names and len(names) > 100
    report = in_venv(venv, outside, importing_each(names))
    assert report["failed"] == {}
    assert Path(report["tui"]).is_relative_to(venv), report["tui"]
    assert not [entry for entry in report["path"] if entry and Path(entry).resolve().is_relative_to(ROOT)]


def test_every_library_the_code_imports_comes_with_the_installed_wheel(venv, outside):
    libraries = third_party_imports()
    assert {"textual", "bm25s", "tiktoken"} <= set(libraries)  # some are imported only inside a function
    report = in_venv(venv, outside, importing_each(libraries))
    assert report["failed"] == {}, "imported by tui/ but not installed with the wheel"


def test_the_shipped_files_are_read_through_the_installed_package(venv, outside):
    found = in_venv(venv, outside, (
        "import json\n"
        "from tui.shipped import shipped_folder\n"
        "themes = sorted(p.name for p in shipped_folder('tui.themes', 'themes').iterdir())\n"
        "samples = sorted(p.name for p in shipped_folder('tui.sample_sessions', 'sample_sessions').iterdir())\n"
        "print(json.dumps({'themes': themes, 'samples': samples}))\n"))
    assert found["themes"] == sorted(path.name for path in (ROOT / "themes").iterdir())
    assert found["samples"] == sorted(path.name for path in (ROOT / "sample_sessions").iterdir())


def test_the_installed_cli_answers(venv, outside):
    version = run(venv, "ctxpane", "--version", home=outside)
    assert version.returncode == 0 and version.stdout.strip(), version.stderr

    sample = subprocess.run([str(venv / "bin" / "python"), "-I", "-c",
                             "from importlib import resources; "
                             "print(resources.files('tui.sample_sessions') / 'forged-tool-result.ctxpane.json')"],
                            capture_output=True, text=True, timeout=60, cwd=str(outside), env=user_env(outside))
    sample_path = Path(sample.stdout.strip())
    assert sample_path.is_relative_to(venv) and sample_path.is_file(), sample.stderr
    rendered = run(venv, "ctxpane", "render", str(sample_path), home=outside)
    assert rendered.returncode == 0, rendered.stderr[-3000:]
    assert "<|im_start|>system" in rendered.stdout  # the shipped qwen3 template rendered it
    assert "(exact, qwen3" in rendered.stderr  # with the shipped Qwen3 tokenizer

    dead = free_port()
    doctor = run(venv, "ctxpane", "doctor", f"http://127.0.0.1:{dead}/v1", home=outside)
    assert doctor.returncode == 2
    assert doctor.stdout == "" and len(doctor.stderr.strip().splitlines()) == 1, doctor.stderr
    assert "cannot connect" in doctor.stderr


def something_listens_on(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.2)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def test_the_installed_app_opens_on_the_offline_sample_in_a_terminal(venv, outside):
    # the README's command as it is (`ctxpane`); --no-scan only where a server of this machine would answer the scan
    args = ["--no-scan"] if any(something_listens_on(port) for port in LOCAL_SERVER_PORTS) else []
    terminal = Tmux(outside, program=str(venv / "bin" / "ctxpane"), folder=outside)
    try:
        terminal.start(*args)
        terminal.wait_for_all(r"\(sample: offline\)", r"\d+ tokens exact \(qwen3\)", timeout=60)
        terminal.keys("hello", literal=True)  # typed into the composer: the shipped tokenizer counts it
        terminal.wait_for(r"hello", timeout=20)
        screen = terminal.screen()
        assert "loading…" not in screen and "Traceback" not in screen and "Error" not in screen, screen
        terminal.keys("C-q")
        terminal.wait_exit()
    finally:
        terminal.stop()


def test_the_installed_tap_shows_a_request_in_a_terminal(venv, outside):
    upstream = LoopbackUpstream()
    port = free_port()
    terminal = Tmux(outside, program=str(venv / "bin" / "ctxpane"), folder=outside)
    try:
        terminal.start("tap", "--upstream", f"{upstream.url}/ok", "--port", str(port),
                       "--session-dir", str(outside / "tapped"))
        terminal.wait_for(rf"tap http://127\.0\.0\.1:{port}", timeout=60)
        body = {"model": "gpt-4o", "stream": True, "messages": [{"role": "user", "content": "through the tap"}]}
        with httpx.stream("POST", f"http://127.0.0.1:{port}/v1/chat/completions", json=body, timeout=30) as reply:
            assert reply.status_code == 200
            streamed = "".join(reply.iter_text())
        assert "three" in streamed  # the upstream's reply reached the client whole
        terminal.wait_for(r"#1 ", timeout=30)  # listed and rendered by the installed recorder
        terminal.wait_for(r"through the tap", timeout=30)
        assert "Traceback" not in terminal.screen()
        terminal.keys("q")
        terminal.wait_for(r"ctxpane: 1 conversation saved in", timeout=30)
    finally:
        terminal.stop()
        upstream.stop()
