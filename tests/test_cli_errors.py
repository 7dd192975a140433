"""The commands' own promises: exports are private (0600), replay --check proves every step or fails,
and bad arguments or inputs to render and import give one line and status 2."""

import json
import os
import stat
import threading

import pytest

from conftest import ROOT
from tui.cli import main

SAMPLE = ROOT / "sample_sessions" / "forged-tool-result.ctxpane.json"
FORMATS = ["markdown", "request", "curl", "document"]


def one_error_line(capsys, code: int, needle: str) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and needle in err[0], err
    return err[0]


# -- exports are written like the session: mode 0600 --------------------------------------------------------
@pytest.mark.parametrize("fmt", FORMATS)
def test_exports_are_private(tmp_path, fmt):
    out = tmp_path / f"new.{fmt}"
    old = os.umask(0o022)
    try:
        assert main(["export", str(SAMPLE), "--format", fmt, "-o", str(out)]) == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE(out.stat().st_mode) == 0o600 and out.read_text()


def test_export_over_an_existing_readable_file_makes_it_private(tmp_path):
    out = tmp_path / "shared.md"
    out.write_text("old")
    out.chmod(0o644)
    assert main(["export", str(SAMPLE), "-o", str(out)]) == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o600 and "# " in out.read_text()
    assert [p.name for p in tmp_path.iterdir()] == ["shared.md"]  # no temporary file left


def test_export_to_a_fifo_writes_into_it_and_leaves_it_a_fifo(tmp_path):
    """A target that is not a regular file (a pipe, /dev/stdout) is written in place, never replaced."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()), daemon=True)
    reader.start()
    assert main(["export", str(SAMPLE), "--format", "request", "-o", str(fifo)]) == 0
    reader.join(10)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert json.loads(received[0])["messages"]


def test_import_writes_a_private_session(tmp_path, capsys):
    body = tmp_path / "body.json"
    body.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}))
    out = tmp_path / "s.ctxpane.json"
    assert main(["import", str(body), "-o", str(out)]) == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o600


# -- replay --check proves each step, or fails naming it ----------------------------------------------------
def test_replay_check_fails_when_a_record_has_no_hash(tmp_path, capsys):
    data = json.loads(SAMPLE.read_text())
    data["requests"][1]["document_hash"] = ""
    path = tmp_path / "unhashed.ctxpane.json"
    path.write_text(json.dumps(data))
    assert main(["replay", str(path), "--check"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("step 1: matches")
    assert lines[1].startswith("step 2: NOT CHECKED") and f"request {data['requests'][1]['number']}" in lines[1]
    assert main(["replay", str(path), "--json", "--step", "2"]) == 1
    assert json.loads(capsys.readouterr().out)["matches_stored"] is False


def test_replay_check_passes_when_every_step_is_proven(capsys):
    assert main(["replay", str(SAMPLE), "--check"]) == 0
    assert all(" matches " in line for line in capsys.readouterr().out.splitlines())


# -- render and import: bad inputs and arguments -------------------------------------------------------------
def write(tmp_path, name, content):
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path


@pytest.mark.parametrize("messages,needle", [
    ([{"role": "assistant", "content": None, "tool_calls": ["oops"]}], "field `[0].tool_calls[0]`"),
    ([{"role": "user", "content": [{"type": "text", "text": 5}]}], "field `[0].content[0].text`"),
    ([{"role": "user", "content": "x", "provenance": {"label": ["a"]}}], "field `[0].provenance.label`"),
    ([{"role": "user", "content": [{"type": "image_url", "width": "wide"}]}], "field `[0].content[0].width`"),
    ({"messages": [{"role": "user", "content": "x"}], "tools": [1]}, "field `tools[0]`"),
    ({"messages": [{"role": "user", "content": 3}]}, "field `messages[0].content`"),
    ({"messages": "hi"}, "field `messages`"),
])
def test_render_refuses_bad_messages_in_one_line(tmp_path, capsys, messages, needle):
    path = write(tmp_path, "conv.json", json.dumps(messages))
    one_error_line(capsys, main(["render", str(path)]), needle)


def test_render_previous_file_is_checked_too(tmp_path, capsys):
    good = write(tmp_path, "good.json", json.dumps([{"role": "user", "content": "x"}]))
    deep = write(tmp_path, "deep.json", "[" * 100_000 + "]" * 100_000)
    one_error_line(capsys, main(["render", str(good), "--previous", str(deep)]), "nested too deeply")


@pytest.mark.parametrize("option", ["--template", "--tokenizer"])
def test_render_refuses_a_fifo_template_or_tokenizer(tmp_path, capsys, option):
    conv = write(tmp_path, "conv.json", json.dumps([{"role": "user", "content": "x"}]))
    fifo = tmp_path / "model.jinja"
    os.mkfifo(fifo)
    one_error_line(capsys, main(["render", str(conv), option, str(fifo)]), "not a regular file")


@pytest.mark.parametrize("pair,needle", [("messages=[]", "variable name"), ("source=x", "variable name"),
                                         ("not-a-name=1", "variable name")])
def test_render_refuses_variables_that_would_collide(tmp_path, capsys, pair, needle):
    conv = write(tmp_path, "conv.json", json.dumps([{"role": "user", "content": "x"}]))
    one_error_line(capsys, main(["render", str(conv), "--var", pair]), needle)


def test_render_variable_values_that_are_not_sane_json_stay_text(tmp_path, capsys):
    conv = write(tmp_path, "conv.json", json.dumps([{"role": "user", "content": "x"}]))
    deep = "[" * 5000 + "]" * 5000
    assert main(["render", str(conv), "--json", "--var", f"x={deep}", "--var", f"y={'9' * 5000}"]) == 0
    assert json.loads(capsys.readouterr().out)["text"]


@pytest.mark.parametrize("content,needle", [
    (json.dumps({"messages": [{"role": "user", "content": "x"}], "max_tokens": "lots"}), "field `max_tokens`"),
    (json.dumps({"messages": [{"role": "user", "content": "x"}], "max_tokens": 10 ** 30}), "field `max_tokens`"),
    (json.dumps({"messages": [{"role": "user", "content": "x"}], "model": ["m"]}), "field `model`"),
    (json.dumps({"messages": [{"role": "user", "tool_calls": [1]}]}), "field `messages[0].tool_calls[0]`"),
    ('{"role": "user", "content": "a"}\n{"role": "user", "content": NaN}\n', "line 2"),
    ('{"role": "user", "content": "a"}\n{"role": "user", "role": "system"}\n', "line 2"),
    (json.dumps({"nothing": 1}), "expected a request body"),
])
def test_import_refuses_bad_input_in_one_line(tmp_path, capsys, content, needle):
    path = write(tmp_path, "in.jsonl" if "\n" in content else "in.json", content)
    out = tmp_path / "out.ctxpane.json"
    one_error_line(capsys, main(["import", str(path), "-o", str(out)]), needle)
    assert not out.exists()


def test_error_lines_never_carry_terminal_escapes_or_newlines(tmp_path, capsys):
    name = "evil\x1b]52;c;aGk=\x07\nname.ctxpane.json"
    path = write(tmp_path, name, "{}")
    line = one_error_line(capsys, main(["replay", str(path), "--check"]), "not a ctxpane session")
    assert "\x1b" not in line and "\x07" not in line
