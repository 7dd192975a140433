"""Shared fixtures: test data, the real llama.cpp server from ../shared, and the skip-or-fail rule.

A user's clone has no ../shared: tests that need it skip with a reason. CI sets
CTXPANE_REQUIRE_SHARED=1, which turns those skips into failures so they always run there.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import settings as hypothesis_settings

from tiers import TIER_MARKS, tiers_of

# No example database: it would be written into the working folder (.hypothesis/), and a later run would replay what
# an earlier one found there, a failure this machine alone then sees. A failing example is printed to reproduce.
hypothesis_settings.register_profile("ctxpane", database=None)
hypothesis_settings.load_profile("ctxpane")

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
SHARED = Path(os.environ.get("CTXPANE_SHARED_DIR", ROOT.parent / "shared"))
REQUIRE_SHARED = os.environ.get("CTXPANE_REQUIRE_SHARED") == "1"
# where start-litellm-gateway.sh and start-llama-server.sh keep their installs (their own defaults), fixed before
# any test points XDG_CACHE_HOME at its own folder: a server started inside a test uses the one install
_USER_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
GATEWAY_CACHE = os.environ.get("LITELLM_CACHE_DIR") or str(_USER_CACHE / "litellm-gateway")
LLAMA_CACHE = os.environ.get("LLAMA_CACHE_DIR") or str(_USER_CACHE / "tiny-llama-server")


def need_shared(reason: str) -> None:
    """Skip (or, under CI, fail) when ../shared is not beside the project."""
    message = f"{reason}: {SHARED} is absent (it exists beside the project on the developers' machines and CI)"
    if REQUIRE_SHARED:
        pytest.fail(message + "; CTXPANE_REQUIRE_SHARED=1 forbids skipping")
    pytest.skip(message)


def shared_template_source(name: str) -> str:
    """A real chat template from ../shared/data/templates (skips, or fails under CI, when it is absent)."""
    path = SHARED / "data" / "templates" / f"{name}.jinja"
    if not path.exists():
        need_shared(f"the real template {name} is needed")
    return path.read_text(encoding="utf-8")


def load_cases() -> list[dict]:
    lines = (DATA / "template_cases.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines[1:] if line.strip()]


def template_source(name: str) -> str:
    return (DATA / "templates" / name).read_text(encoding="utf-8")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_llama_server(**env: str):
    """Start a real llama.cpp server on a free port with `env` (LLAMA_PARALLEL, LLAMA_CTX, LLAMA_SERVER_ARGS...).

    Returns (base URL …/v1, stop function); skips (or fails under CI) without ../shared.
    """
    script = SHARED / "server" / "start-llama-server.sh"
    if not script.exists():
        need_shared("the real llama.cpp server is needed")
    port = free_port()
    env = {**os.environ, "LLAMA_CACHE_DIR": LLAMA_CACHE, **env}
    result = subprocess.run(["bash", str(script), str(port)], capture_output=True, text=True, timeout=300, env=env)
    if result.returncode != 0:
        pytest.fail(f"llama-server did not start: {result.stderr[-2000:]}")

    def stop() -> None:
        subprocess.run(["bash", str(script), "stop", str(port)], capture_output=True, timeout=60, env=env)

    return result.stdout.strip().splitlines()[-1], stop


@contextmanager
def started_llama(**settings: str):
    """A real llama.cpp server of its own on a free port, with the start script's settings
    (LLAMA_CTX="512", LLAMA_SERVER_ARGS="--context-shift"): yields its base URL (…/v1)."""
    url, stop = start_llama_server(**settings)
    try:
        yield url
    finally:
        stop()


@pytest.fixture(scope="session")
def llama_server():
    """The real llama.cpp server with the tiny Qwen3 model: yields its base URL (…/v1)."""
    with started_llama() as url:
        yield url


@pytest.fixture(scope="session")
def llama_512():
    """The real server with a 512-token window (LLAMA_CTX=512): for requests over it."""
    with started_llama(LLAMA_CTX="512") as url:
        yield url


@pytest.fixture(scope="session")
def llama_512_shift():
    """The same with --context-shift: a reply that reaches the window goes on, dropping the oldest tokens."""
    with started_llama(LLAMA_CTX="512", LLAMA_SERVER_ARGS="--context-shift") as url:
        yield url


@dataclass
class Gateway:
    """A real LiteLLM proxy in front of the real llama.cpp server. `key` is its key: tests put it in an
    environment variable (never in a file or on a command line) and scan their output for it."""

    url: str  # the gateway's base URL, …/v1
    key: str = field(repr=False)
    upstream: str  # the llama.cpp server's base URL behind it


@pytest.fixture(scope="session")
def litellm_gateway(llama_server):
    """One real LiteLLM gateway per test session (it takes ~15 s to start; the first install ~4 minutes,
    cached in $LITELLM_CACHE_DIR or ~/.cache/litellm-gateway). Both gateway test files share it: they are in
    the xdist group "gateway", so one worker runs them all."""
    script = SHARED / "server" / "start-litellm-gateway.sh"
    if not script.exists():
        need_shared("the real LiteLLM gateway is needed")
    port = free_port()
    env = {**os.environ, "LITELLM_CACHE_DIR": GATEWAY_CACHE}  # the install stays cached whatever a test set
    result = subprocess.run(["bash", str(script), str(port), llama_server], capture_output=True, text=True,
                            timeout=900, env=env)
    try:
        if result.returncode != 0:
            pytest.fail(f"the LiteLLM gateway did not start: {result.stderr[-2000:]}")
        key = subprocess.run(["bash", str(script), "key", str(port)], capture_output=True, text=True,
                             timeout=30, env=env).stdout.strip()
        assert key.startswith("sk-"), "the gateway's key file is missing"
        yield Gateway(result.stdout.strip().splitlines()[-1], key, llama_server)
    finally:
        subprocess.run(["bash", str(script), "stop", str(port)], capture_output=True, timeout=60, env=env)


def files_holding(root: Path, secret: str) -> list[Path]:
    """Every file under `root` whose bytes contain `secret` (the key must be in none)."""
    needle = secret.encode()
    return [path for path in root.rglob("*") if path.is_file() and needle in path.read_bytes()]


@pytest.hookimpl(trylast=True)  # after pytest's own configure has made the run's temporary folder
def pytest_configure(config):
    """Hypothesis keeps its caches (the constants it draws from the source, read while the tests are collected;
    Unicode tables) in .hypothesis/ of the working folder, the repository: the run's own folder instead."""
    from hypothesis.configuration import set_hypothesis_home_dir
    set_hypothesis_home_dir(config._tmp_path_factory.mktemp("hypothesis"))


@pytest.fixture(autouse=True)
def own_folders(tmp_path_factory, monkeypatch):
    """Every test has ctxpane's folders of its own, never the user's: it writes its data (sessions, prompt history,
    screenshots) and cache (search index, clipboard file) there, and reads no config.toml or prices.toml this
    machine happens to have; nor does a server or key of this machine's environment reach it. A test that sets
    these itself sets them after this."""
    for name in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"):
        monkeypatch.setenv(name, str(tmp_path_factory.mktemp(name.lower().replace("_", "-"))))
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_MODEL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture()
def cli_in_process(capsys, monkeypatch, tmp_path):
    """`ctxpane ARGS` run in this process (no interpreter start-up: much faster than `run_cli`), with
    config and data folders of its own; returns an object like CompletedProcess."""
    from types import SimpleNamespace

    from tui.cli import main

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))

    def run(*args: str) -> SimpleNamespace:
        code = main(list(args))
        captured = capsys.readouterr()
        return SimpleNamespace(returncode=code, stdout=captured.out, stderr=captured.err)

    return run


def drop_read_override() -> list[str]:
    """A command prefix under which even root obeys file permissions (so unreadable files can be tested)."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: file permissions cannot be enforced")
    return ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"]


@pytest.fixture()
def run_cli(tmp_path):
    """Run the real `ctxpane` entry point in a subprocess; returns CompletedProcess."""

    def run(*args: str, input_text: str | None = None, env: dict | None = None, timeout: int = 120,
            without_root_reads: bool = False):
        full_env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data"),
                    "XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_CACHE_HOME": str(tmp_path / "cache"),
                    **(env or {})}
        prefix = drop_read_override() if without_root_reads else []
        return subprocess.run([*prefix, sys.executable, "-m", "tui", *args], capture_output=True, text=True,
                              input=input_text, env=full_env, timeout=timeout, cwd=str(ROOT))

    return run


def pytest_collection_modifyitems(config, items):
    """Each test marked with one tier (tests/tiers.py): `pytest -m unit` runs the fast, pure tier alone. A tier
    mark written on a test, its class or module is a floor of the computed tier, then left for that one."""
    tiers = tiers_of(items)
    for item in items:
        for node in item.listchain():
            node.own_markers[:] = [mark for mark in node.own_markers if mark.name not in TIER_MARKS]
            if hasattr(node, "keywords"):
                for name in TIER_MARKS & set(node.keywords):
                    node.keywords._markers.pop(name, None)
    for item, tier in zip(items, tiers):
        item.add_marker(tier.mark)


@pytest.fixture(autouse=True)
def unit_tests_stay_in_process(request, monkeypatch):
    """A test marked unit that opens a network socket or starts a process is not one: it fails, naming what it
    used, so the tier rules (tests/tiers.py) learn it, rather than the inner loop growing slow unseen."""
    if request.node.get_closest_marker("unit") is None:
        yield
        return
    used: list[str] = []
    real_connect, real_bind, real_spawn = socket.socket.connect, socket.socket.bind, subprocess.Popen._execute_child
    # threads another test's module-scoped fixture left running (a tap, a loopback server) are not this test's
    others = {thread.ident for thread in threading.enumerate()} - {threading.get_ident()}

    def note(what: str) -> None:
        if threading.get_ident() not in others:
            used.append(what)

    def connect(sock, address, *rest):
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            note(f"a socket to {address}")
        return real_connect(sock, address, *rest)

    def bind(sock, address, *rest):
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            note(f"a socket bound to {address}")
        return real_bind(sock, address, *rest)

    def spawn(popen, args, *rest, **named):
        note(f"a process {str(args)[:80]}")
        return real_spawn(popen, args, *rest, **named)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "bind", bind)
    monkeypatch.setattr(subprocess.Popen, "_execute_child", spawn)
    yield
    if used:
        pytest.fail(f"a unit test used {used[0]} ({len(used)} in all): give tests/tiers.py the rule that finds it")
