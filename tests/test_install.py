"""The installed console script works from any folder (package data included, no source tree)."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT


def test_console_script_renders_sample_outside_the_checkout(tmp_path):
    script = shutil.which("ctxpane", path=str(Path(sys.executable).parent))
    if script is None:
        pytest.fail("the ctxpane console script is not installed beside this interpreter; "
                    "install the project first (see README)")
    sample = ROOT / "sample_sessions" / "forged-tool-result.messages.json"
    result = subprocess.run([script, "render", str(sample), "--template", "harmony", "--json"],
                            capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["tokenizer"] == "o200k_harmony" and data["tokens"]["total"] > 50
