"""`replay --check` with a tokenizer it cannot read (issue 41): one line on stderr naming the file and why, status 2 (a
bad input, as everywhere in the CLI); a tokenizer path recorded in the session is never opened at all.

The failure found: a tokenizer path inside a folder the user may not enter made the look at the path itself (before
any read) raise PermissionError: exit 1 and a traceback, no line saying which file. Root enters any folder, so that
case runs the CLI with the permission override dropped (conftest.drop_read_override); the others run in process."""

from __future__ import annotations

import json
import os

import pytest

from conftest import ROOT

SAMPLE = ROOT / "sample_sessions" / "forged-tool-result.ctxpane.json"


def unreadable(tmp_path, kind: str) -> str:
    """A tokenizer path that cannot be read as one: a chmod 000 file (root reads it anyway: then its text is no
    tokenizer), a folder without tokenizer.json, a FIFO."""
    if kind == "chmod 000 file":
        path = tmp_path / "tokenizer.json"
        path.write_text("not a tokenizer")
        path.chmod(0)
    elif kind == "folder":
        path = tmp_path / "empty-folder"
        path.mkdir()
    else:
        path = tmp_path / "tokenizer-fifo"
        os.mkfifo(path)
    return str(path)


def one_line(result) -> str:
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1 and result.stdout == "", (result.returncode, result.stderr)
    return lines[0]


@pytest.mark.parametrize("kind", ["chmod 000 file", "folder", "fifo"])
def test_an_unreadable_tokenizer_is_one_line_naming_it_and_status_2(cli_in_process, tmp_path, kind):
    path = unreadable(tmp_path, kind)
    line = one_line(cli_in_process("replay", str(SAMPLE), "--check", "--tokenizer", path))
    assert line.startswith("ctxpane: error: ") and path in line
    assert any(why in line for why in ("permission denied", "cannot read tokenizer", "not a regular file"))


@pytest.mark.parametrize("kind", ["chmod 000 file", "folder", "fifo"])
def test_a_tokenizer_path_recorded_in_the_session_is_never_opened(cli_in_process, tmp_path, kind):
    path = unreadable(tmp_path, kind)
    data = json.loads(SAMPLE.read_text())
    data["tokenizer"] = path
    for record in data["requests"]:
        record["tokenizer"] = path
    session = tmp_path / "recorded.ctxpane.json"
    session.write_text(json.dumps(data))
    result = cli_in_process("replay", str(session), "--check")
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert f"by {path}: not compared" in result.stdout  # an estimate now, said so on each step


def test_a_tokenizer_in_a_folder_that_cannot_be_entered_is_one_line_not_a_traceback(run_cli, tmp_path):
    folder = tmp_path / "locked"
    folder.mkdir()
    (folder / "tokenizer.json").write_text("{}")
    folder.chmod(0)
    try:
        result = run_cli("replay", str(SAMPLE), "--check", "--tokenizer", str(folder / "tokenizer.json"),
                         without_root_reads=True)
    finally:
        folder.chmod(0o700)
    line = one_line(result)
    assert "Traceback" not in result.stderr and str(folder / "tokenizer.json") in line and "permission denied" in line
