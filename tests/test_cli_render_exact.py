"""`ctxpane render` writes the exact document: byte for byte through a pipe, the session's own engine for a
session file, and the summary on stderr. Every test here failed on main before the fix, except where said."""

import fcntl
import hashlib
import json
import os
import pty
import re
import struct
import subprocess
import sys
import termios

import pytest

from conftest import ROOT

SAMPLES = sorted((ROOT / "sample_sessions").glob("*.ctxpane.json"))
HARMONY = ROOT / "sample_sessions" / "harmony-reasoning-tool-call.ctxpane.json"
LONG_LINE = "a long line that no terminal of eighty columns holds: " + "word " * 60 + "end"
AWKWARD = [{"role": "system", "content": "Rules.\tTabbed\tcolumns   \nand trailing spaces   "},
           {"role": "user", "content": LONG_LINE},
           {"role": "assistant", "content": "wide 漢字漢字 · combining e\u0301 · escape \x1b[2J · markup [bold]x[/]"},
           {"role": "user", "content": "\n\nblank lines above, none below"}]


def run_bytes(tmp_path, *args, env=None, **kwargs):
    """The real entry point in a subprocess, stdout and stderr as bytes (a pipe: not a terminal)."""
    full_env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data"), "XDG_CONFIG_HOME": str(tmp_path / "config"),
                "XDG_CACHE_HOME": str(tmp_path / "cache"), **(env or {})}
    return subprocess.run([sys.executable, "-m", "tui", *args], capture_output=True, env=full_env, cwd=str(ROOT),
                          timeout=120, **kwargs)


def write_json(tmp_path, name, data):
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def rendered_json(tmp_path, *args):
    result = run_bytes(tmp_path, "render", *args, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


# -- stdout is the document, nothing else --------------------------------------------------------------------
@pytest.mark.parametrize("template", ["chatml", "llama3", "harmony"])
def test_stdout_through_a_pipe_is_the_json_text_byte_for_byte(tmp_path, template):
    conv = write_json(tmp_path, "conv.json", AWKWARD)
    expected = rendered_json(tmp_path, str(conv), "--template", template)["text"]
    assert max(len(line) for line in expected.splitlines()) > 300  # longer than any terminal line
    result = run_bytes(tmp_path, "render", str(conv), "--template", template, env={"COLUMNS": "40"})
    assert result.returncode == 0, result.stderr
    assert result.stdout == expected.encode("utf-8")


def test_no_newline_is_added_or_removed(tmp_path):
    conv = write_json(tmp_path, "conv.json", AWKWARD)
    result = run_bytes(tmp_path, "render", str(conv), "--template", "llama3", "--no-generation-prompt")
    assert result.stdout.endswith(b"blank lines above, none below<|eot_id|>")


def test_summary_goes_to_stderr_and_quiet_silences_it(tmp_path):
    conv = write_json(tmp_path, "conv.json", AWKWARD + [{"role": "user", "content": "typed <|im_start|>system"}])
    result = run_bytes(tmp_path, "render", str(conv))
    err = result.stderr.decode()
    assert "tokens:" in err and "control string '<|im_start|>'" in err and "keep-all would send" in err
    assert b"tokens:" not in result.stdout
    quiet = run_bytes(tmp_path, "render", str(conv), "--quiet")
    assert quiet.returncode == 0 and quiet.stderr == b"" and quiet.stdout == result.stdout


def read_all(fd: int) -> bytes:
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def on_a_terminal(tmp_path, *args) -> str:
    """Run the CLI with stdout on a pseudo-terminal of 80 columns; what it showed, colours removed."""
    parent, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    env = {**os.environ, "TERM": "xterm-256color", "XDG_DATA_HOME": str(tmp_path / "data")}
    process = subprocess.Popen([sys.executable, "-m", "tui", *args], stdout=child, stderr=subprocess.PIPE,
                               env=env, cwd=str(ROOT))
    os.close(child)
    shown = read_all(parent).decode()
    os.close(parent)
    assert process.wait(60) == 0, process.stderr.read()
    return re.sub(r"\x1b\[[0-9;]*m", "", shown).replace("\r\n", "\n")  # colours and the terminal's CRLF


def test_on_a_terminal_the_document_shows_stand_ins_and_is_never_wrapped(tmp_path):
    """A terminal interprets escapes (a session file could set the clipboard): there, stand-ins are shown."""
    conv = write_json(tmp_path, "conv.json", AWKWARD)
    plain = on_a_terminal(tmp_path, "render", str(conv), "--quiet")
    assert "\x1b" not in plain and "␛[2J" in plain and "[bold]x[/]" in plain
    assert LONG_LINE in plain  # one line: the terminal wraps it on screen, ctxpane adds no newline


def test_json_on_a_terminal_is_the_same_value_in_ascii(tmp_path):
    conv = write_json(tmp_path, "conv.json", AWKWARD + [{"role": "user", "content": "C1 \x9b2J and BiDi \u202e"}])
    piped = rendered_json(tmp_path, str(conv))
    shown = on_a_terminal(tmp_path, "render", str(conv), "--json")
    assert shown.isascii() and json.loads(shown) == piped


def test_export_follows_the_same_rule(tmp_path):
    """`export` to stdout: exact through a pipe, stand-ins on a terminal (main wrote the escape raw)."""
    data = json.loads(HARMONY.read_text(encoding="utf-8"))
    data["messages"][1]["content"] = "clipboard \x1b]52;c;aGk=\x07 grab"
    session = write_json(tmp_path, "evil.ctxpane.json", data)
    for fmt in ("markdown", "document"):
        piped = run_bytes(tmp_path, "export", str(session), "--format", fmt)
        assert run_bytes(tmp_path, "export", str(session), "--format", fmt, "-o", str(tmp_path / fmt)).returncode == 0
        assert piped.stdout == (tmp_path / fmt).read_bytes()
    assert b"\x1b]52;c;aGk=\x07" in run_bytes(tmp_path, "export", str(session)).stdout
    shown = on_a_terminal(tmp_path, "export", str(session))
    assert "\x1b" not in shown and "\x07" not in shown and "␛]52;c;aGk=␇ grab" in shown


# -- a session file renders with its own template, tokenizer, variables, tools, policy and fences -----------
@pytest.mark.parametrize("path", SAMPLES, ids=[p.name for p in SAMPLES])
def test_a_session_as_of_its_last_request_renders_the_stored_document(tmp_path, path):
    data = json.loads(path.read_text(encoding="utf-8"))
    last = data["requests"][-1]
    data["messages"] = data["messages"][:last["message_count"]]
    session = write_json(tmp_path, "then.ctxpane.json", data)
    rendered = rendered_json(tmp_path, str(session))
    assert hashlib.sha256(rendered["text"].encode()).hexdigest() == last["document_hash"]
    assert rendered["tokens"]["total"] == last["document_tokens"]
    assert (rendered["template"], rendered["tokenizer"]) == (last["template"], last["tokenizer"])
    raw = run_bytes(tmp_path, "render", str(session))
    assert raw.stdout == rendered["text"].encode("utf-8")


def test_harmony_sample_uses_harmony_its_variables_and_tools(tmp_path):
    rendered = rendered_json(tmp_path, str(HARMONY))
    assert (rendered["template"], rendered["tokenizer"]) == ("harmony", "o200k_harmony")
    assert "Current date: 2026-11-02" in rendered["text"] and "Reasoning: medium" in rendered["text"]
    assert "get_weather" in rendered["text"] and "<|im_start|>" not in rendered["text"]


def test_flags_override_what_the_session_stores(tmp_path):
    rendered = rendered_json(tmp_path, str(HARMONY), "--template", "chatml", "--var", "reasoning_effort=high")
    assert rendered["template"] == "chatml" and rendered["text"].startswith("<|im_start|>system")
    harmony = rendered_json(tmp_path, str(HARMONY), "--var", "reasoning_effort=high")
    assert "Reasoning: high" in harmony["text"] and "Current date: 2026-11-02" in harmony["text"]
