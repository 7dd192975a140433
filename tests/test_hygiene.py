"""The suite passes on a fresh clone: no test writes to (or reads from) a fixed folder of one machine.

A test that saves into `/tmp/some-folder` passes only where another test (or a person) made that folder;
every file a test writes goes under its own `tmp_path`.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
FIXED_TEMP = tuple(f"/{folder}/" for folder in ("tmp", "var/tmp", "dev/shm"))  # (spelled so, it is none itself)


def fixed_temp_paths(source: str) -> list[tuple[int, str]]:
    """String literals that are a path in a machine-wide temp folder (a label such as `file:/tmp/x` is not)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith(FIXED_TEMP):
            found.append((node.lineno, node.value))
    return found


def test_the_scan_finds_a_fixed_temp_folder():
    fixed = FIXED_TEMP[0] + "wire12-shots"
    assert fixed_temp_paths(f'app.save_screenshot("x.svg", "{fixed}")') == [(1, fixed)]
    assert fixed_temp_paths(f'label = "file:{FIXED_TEMP[0]}x.jinja"') == []


def test_no_test_names_a_fixed_temp_folder():
    offenders = [f"{path.relative_to(TESTS)}:{line}: {text}"
                 for path in sorted(TESTS.rglob("*.py")) if path.name != Path(__file__).name
                 for line, text in fixed_temp_paths(path.read_text(encoding="utf-8"))]
    assert not offenders, "write under tmp_path instead:\n" + "\n".join(offenders)
