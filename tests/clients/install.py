"""Install the pinned real clients (pins.txt) into a cache of their own, for the client harness.

    python3 tests/clients/install.py          # .ci/run calls it before the suite

The cache is $CTXPANE_CLIENTS_DIR, else ${XDG_CACHE_HOME:-~/.cache}/ctxpane-clients: the Python clients in a venv
of their own (py/), the npm ones under npm/. A stamp holding the pins it was made from makes a second run a no-op
(well under a second); a change of pins.txt reinstalls. Only the package registries are reached (PyPI, npm).
Stdlib only: it runs before any venv exists.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PINS = HERE / "pins.txt"
CONSTRAINTS = HERE / "constraints.txt"  # the Python clients' dependencies, pinned too


def cache_dir() -> Path:
    explicit = os.environ.get("CTXPANE_CLIENTS_DIR")
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ctxpane-clients"


def read_pins(path: Path = PINS) -> list[tuple[str, str, str]]:
    """(registry, name, version) of each pinned client."""
    pins = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            registry, name, version = line.split()
            pins.append((registry, name, version))
    return pins


def stamp_of(pins: list) -> list:
    """What an install is made from: the pins, and the constraints on their dependencies (a change of either
    reinstalls)."""
    constraints = [line for line in CONSTRAINTS.read_text(encoding="utf-8").splitlines()
                   if line.strip() and not line.startswith("#")]
    return [list(pin) for pin in pins] + [["constraints", *constraints]]


def installed(cache: Path, pins: list) -> bool:
    stamp = cache / "installed.json"
    try:
        return json.loads(stamp.read_text(encoding="utf-8")) == stamp_of(pins)
    except (OSError, ValueError):
        return False


def run(*command: str, **options) -> None:
    print("+", " ".join(command), file=sys.stderr, flush=True)
    subprocess.run(command, check=True, **options)


def install_python(cache: Path, pins: list) -> None:
    venv = cache / "py"
    if venv.exists():  # a partial or older install: start clean, so nothing of it lingers
        shutil.rmtree(venv)
    run(sys.executable, "-m", "venv", str(venv))
    wanted = [f"{name}=={version}" for registry, name, version in pins if registry == "pypi"]
    run(str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", "-c", str(CONSTRAINTS), *wanted)
    # the whole resolved set, beside the stamp: what a failing run had is then known
    frozen = subprocess.run([str(venv / "bin" / "pip"), "freeze"], capture_output=True, text=True, check=True)
    (cache / "py-freeze.txt").write_text(frozen.stdout, encoding="utf-8")


def install_npm(cache: Path, pins: list) -> None:
    prefix = cache / "npm"
    if prefix.exists():
        shutil.rmtree(prefix)
    prefix.mkdir(parents=True)
    wanted = [f"{name}@{version}" for registry, name, version in pins if registry == "npm"]
    # --save-exact and a package.json of its own: the prefix is not a project's, and the pins stay exact
    (prefix / "package.json").write_text('{"private": true}\n', encoding="utf-8")
    env = {**os.environ, "DISABLE_AUTOUPDATER": "1", "npm_config_update_notifier": "false"}
    run("npm", "install", "--prefix", str(prefix), "--save-exact", "--no-audit", "--no-fund", "--loglevel=error",
        *wanted, env=env)


def main() -> int:
    cache = cache_dir()
    pins = read_pins()
    if installed(cache, pins):
        print(f"the clients are installed in {cache}", file=sys.stderr)
        return 0
    started = time.monotonic()
    cache.mkdir(parents=True, exist_ok=True)
    (cache / "installed.json").unlink(missing_ok=True)  # written last: an interrupted install is redone
    install_python(cache, pins)
    install_npm(cache, pins)
    (cache / "installed.json").write_text(json.dumps(stamp_of(pins)), encoding="utf-8")
    print(f"the clients installed in {cache} in {time.monotonic() - started:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
