"""Each test's tier, read from what it uses: its fixtures (and theirs), the names its code and its module's helpers
reach, its marks. conftest.py marks every collected test with one tier, the heaviest it reaches, so that
`pytest -m unit` is a fast inner loop and `-m "not terminal"` and the like pick the rest.

The tiers, lightest first:
- unit: pure Python in the test's process (the engine, the controller without a server, file formats);
- bulk: pure Python too, over many examples (a Hypothesis property, or one test parametrized over a corpus, more than
  MANY_CASES cases: the reference renderings) or a large input (marked `bulk`: a megabyte of text, thousands of
  messages, every real template, a whole vocabulary);
- app: a Textual app driven by a pilot, or an SVG snapshot;
- process: a subprocess (`ctxpane` itself, curl, an SDK's script) or a loopback server on a socket;
- server: the real llama.cpp server or LiteLLM gateway from ../shared (deselected by default: a step of .ci/run,
  `-m 'server or terminal'`);
- terminal: ctxpane in a real terminal (tmux) (deselected by default, run with the server tier);
- installed: the built wheel in a fresh venv (deselected by default);
- clients: real clients (agents, SDKs) installed from the registries, driven through the tap in front of the real
  server (tests/test_clients.py; deselected by default, a step of .ci/run of its own).
"""

from __future__ import annotations

import inspect
import sys
from collections import Counter
from enum import IntEnum
from functools import cache
from pathlib import Path
from types import CodeType, FunctionType, ModuleType
from typing import Any, Iterator


class Tier(IntEnum):
    UNIT = 0
    BULK = 1
    APP = 2
    PROCESS = 3
    SERVER = 4
    TERMINAL = 5
    INSTALLED = 6
    CLIENTS = 7

    @property
    def mark(self) -> str:
        return self.name.lower()


# fixtures that are a tier by themselves (pytest-textual-snapshot's, and those of conftest.py and the test modules)
FIXTURE_TIERS = {
    "snap_compare": Tier.APP,
    "llama_server": Tier.SERVER,
    "llama_512": Tier.SERVER,
    "llama_512_shift": Tier.SERVER,
    "litellm_gateway": Tier.SERVER,
    "tmux": Tier.TERMINAL,
}
# names whose mere use puts a test in a tier (an attribute called, a helper of conftest.py)
NAME_TIERS = {
    "run_test": Tier.APP,  # App.run_test: a pilot
    "create_subprocess_exec": Tier.PROCESS,
    "create_subprocess_shell": Tier.PROCESS,
    "Popen": Tier.PROCESS,
    "free_port": Tier.PROCESS,  # conftest's: a port to listen on or to find refused
    "started_llama": Tier.SERVER,
    "start_llama_server": Tier.SERVER,
}
# where an object a test reaches comes from
MODULE_TIERS = (
    ("textual", Tier.APP), ("pytest_textual_snapshot", Tier.APP), ("tui.app", Tier.APP), ("app_helpers", Tier.APP),
    ("subprocess", Tier.PROCESS), ("fault_server", Tier.PROCESS), ("tap_helpers", Tier.PROCESS),
    ("provider_count_servers", Tier.PROCESS), ("aiohttp", Tier.PROCESS), ("http.server", Tier.PROCESS),
    ("window_servers", Tier.PROCESS), ("tool_call_server", Tier.PROCESS), ("socketserver", Tier.PROCESS),
    ("socket", Tier.PROCESS),
    ("tmux_driver", Tier.TERMINAL), ("client_rig", Tier.CLIENTS),
)
EXPLICIT_MARKS = {tier.mark: tier for tier in Tier}
TIER_MARKS = frozenset(EXPLICIT_MARKS)
MANY_CASES = 100  # one test parametrized over more cases than this runs over a corpus
TESTS = Path(__file__).resolve().parent


def tier_of_module_name(name: str) -> Tier:
    for prefix, tier in MODULE_TIERS:
        if name == prefix or name.startswith(prefix + "."):
            return tier
    return Tier.UNIT


def tier_of_value(value: Any) -> Tier:
    """The tier an object a test reaches puts it in: by the module it comes from."""
    if isinstance(value, ModuleType):
        return tier_of_module_name(value.__name__)
    module = getattr(value, "__module__", None)
    if not isinstance(module, str):
        module = getattr(type(value), "__module__", "") or ""
    return tier_of_module_name(module)


def code_objects(code: CodeType) -> Iterator[CodeType]:
    yield code
    for constant in code.co_consts:
        if isinstance(constant, CodeType):
            yield from code_objects(constant)


@cache
def tier_of_function(function: Any) -> Tier:
    """The heaviest tier the code of `function` reaches: the names it uses, looked up in its module, and the
    functions of the test's own module it calls, followed (once per function: fixtures and helpers are shared)."""
    return tier_reached(function, set())


def tier_reached(function: Any, seen: set[int]) -> Tier:
    function = inspect.unwrap(function)
    code = getattr(function, "__code__", None)
    if code is None or id(code) in seen:
        return Tier.UNIT
    seen.add(id(code))
    found = Tier.UNIT
    module_globals = getattr(function, "__globals__", {})
    for each in code_objects(code):
        for name in each.co_names:
            found = max(found, NAME_TIERS.get(name, Tier.UNIT), tier_of_module_name(name))  # an import's module
            if name not in module_globals:
                continue
            value = module_globals[name]
            found = max(found, tier_of_value(value))
            if isinstance(value, FunctionType) and is_ours(value):
                found = max(found, tier_reached(value, seen))  # a helper of the tests (this module's or another's)
            elif isinstance(value, type) and is_ours_class(value):
                for member in vars(value).values():  # a helper class of the tests
                    if isinstance(member, FunctionType):
                        found = max(found, tier_reached(member, seen))
    return found


@cache
def is_ours(function: Any) -> bool:
    code = getattr(inspect.unwrap(function), "__code__", None)
    return code is not None and Path(code.co_filename).resolve().is_relative_to(TESTS)


def is_ours_class(cls: type) -> bool:
    module = sys.modules.get(cls.__module__)
    path = getattr(module, "__file__", None)
    return path is not None and Path(path).resolve().is_relative_to(TESTS)


def tiers_of(items: list[Any]) -> list[Tier]:
    """The tier of each collected test; a test parametrized over a corpus is at least bulk."""
    cases = Counter(case_family(item) for item in items)
    return [max(tier_of_item(item), Tier.BULK if cases[case_family(item)] > MANY_CASES else Tier.UNIT)
            for item in items]


def case_family(item: Any) -> tuple[str, str]:
    """The test function a parametrized case belongs to."""
    return item.nodeid.split("::")[0], getattr(item, "originalname", item.name)


def tier_of_item(item: Any) -> Tier:
    """The heaviest tier among the test's marks, its fixtures (with the code of each) and its own code."""
    found = max((EXPLICIT_MARKS[mark.name] for mark in item.iter_markers() if mark.name in EXPLICIT_MARKS),
                default=Tier.UNIT)
    definitions = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
    for name in getattr(item, "fixturenames", ()):
        found = max(found, FIXTURE_TIERS.get(name, Tier.UNIT))
        for definition in definitions.get(name, ()):
            # pytest's own (tmp_path, monkeypatch) and plugins' are not read, nor those every test has (autouse)
            if is_ours(definition.func) and not getattr(definition, "_autouse", False):
                found = max(found, tier_of_function(definition.func))
    function = getattr(item, "function", None)
    if function is not None:
        found = max(found, tier_of_function(function))
        if getattr(function, "is_hypothesis_test", False):  # Hypothesis's @given: many examples per test
            found = max(found, Tier.BULK)
    return found
