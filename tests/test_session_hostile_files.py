"""Corrupt and hostile session files: each gives one line on stderr and exit status 2, and stays byte-identical.

Every command that takes a session file is tried (replay, replay --check, export in every format);
files that are bad as JSON are also given to render and import. The app opens the worst of them
and keeps running.
"""

import hashlib
import json
import os
import resource
import stat
import subprocess
import sys

import pytest

from app_helpers import document_rows, isolated, make_app
from app_helpers import settle as settle_once
from conftest import ROOT, drop_read_override
from tui.cli import main
from tui.sessions.store import SessionFileError, load_session

SAMPLE = ROOT / "sample_sessions" / "forged-tool-result.ctxpane.json"
GOOD = json.loads(SAMPLE.read_text())
HEAD = '{"format": "ctxpane-session", "version": 1, '
DEEP = "[" * 100_000 + "]" * 100_000


def changed(change) -> str:
    data = json.loads(SAMPLE.read_text())
    change(data)
    return json.dumps(data)


def template_session(text: str | None, name: str = "custom", origin: str = "builtin") -> str:
    spec = {"name": name, "origin": origin, **({"text": text} if text is not None else {})}
    return changed(lambda d: d.update(template=spec))


# Bad as JSON: every reader of JSON files must refuse these (name -> content, what the line says).
JSON_CASES = {
    "deep-100k": (HEAD + '"messages": ' + DEEP + "}", "nested too deeply"),
    "int-5000-digits": (HEAD + '"messages": [], "policy": {"context_window": ' + "9" * 5000 + "}}", "out of range"),
    "deep-200": (HEAD + '"messages": [], "params": {"x": ' + "[" * 200 + "]" * 200 + "}}", "nested too deeply"),
    "int-30-digits-free-form": (HEAD + '"messages": [], "params": {"seed": ' + "9" * 30 + "}}", "out of range"),
    "nan": (HEAD + '"messages": [], "policy": {"context_window": NaN}}', "NaN and Infinity"),
    "infinity": (HEAD + '"messages": [], "policy": {"max_tokens": -Infinity}}', "NaN and Infinity"),
    "duplicated-key": (HEAD + '"title": "a", "title": "b", "messages": []}', 'key "title" twice'),
    "duplicated-key-inside": (HEAD + '"messages": [{"role": "user", "role": "system", "content": "x"}]}',
                              'key "role" twice'),
    "utf8-bom": (b"\xef\xbb\xbf" + SAMPLE.read_bytes(), "byte order mark"),
    "invalid-utf8": (SAMPLE.read_bytes().replace(b'"title": "', b'"title": "\xff\xfe', 1), "not UTF-8"),
    "lone-surrogate": (HEAD + '"title": "\\ud800", "messages": []}', "surrogate"),
    "binary": (b"\x00\x01\x02\x03\xff" * 50, "binary file"),
    "empty": (b"", "is empty"),
    "only-spaces": (b"  \n\t ", "is empty"),
    "truncated": (SAMPLE.read_bytes()[:700], "truncated"),
    "not-json": (b"hello, world", "not valid JSON at line 1, column 1"),
}

# Valid JSON, wrong as a session.
TOP_LEVEL_WRONG_TYPES = {"format": 1, "version": "1", "id": 5, "title": [], "created": 1, "updated": {},
                         "endpoint": "http://x", "template": "chatml", "tokenizer": 1, "policy": [],
                         "fences": "yes", "variables": [], "tools": {}, "params": [], "messages": {},
                         "requests": {}}
SESSION_CASES = {
    "format-markup": ('{"format": "[/]", "version": 1, "messages": []}', "not a ctxpane session (format is '[/]'"),
    "root-is-a-list": ("[" + json.dumps(GOOD) + "]", "not a session object"),
    "deep-root": (DEEP, "not a session object"),
    "context-window-string": (changed(lambda d: d["policy"].update(context_window="8192")),
                              "field `policy.context_window`: expected int or null, got str"),
    "tool-calls-oops": (changed(lambda d: d["messages"][2].update(tool_calls=["oops"])),
                        "field `messages[2].tool_calls[0]`: expected object, got str"),
    "label-list": (changed(lambda d: d["messages"][3]["provenance"].update(label=["a"])),
                   "field `messages[3].provenance.label`: expected str, got array"),
    "dropped-int": (changed(lambda d: d["requests"][0].update(dropped=[1])),
                    "field `requests[0].dropped[0]`: expected object, got int"),
    "version-negative": (changed(lambda d: d.update(version=-1)), "field `version`"),
    "version-zero": (changed(lambda d: d.update(version=0)), "field `version`"),
    "version-huge": (changed(lambda d: d.update(version=10 ** 30)), "field `version`"),
    "version-bool": (changed(lambda d: d.update(version=True)), "no valid 'version'"),
    "title-1mb": (changed(lambda d: d.update(title="t" * 1_000_000)), "field `title`: expected str of length <= 1000"),
    "label-1mb": (changed(lambda d: d["messages"][3]["provenance"].update(label="l" * 1_000_000)),
                  "field `messages[3].provenance.label`: expected str of length <= 500"),
    "content-over-32m": (changed(lambda d: d["messages"][1].update(content="c" * (32 * 1024 * 1024 + 1))),
                         "field `messages[1].content`"),
    "id-path-traversal": (changed(lambda d: d.update(id="../../../tmp/owned")), "field `id`"),
    "variable-collides": (changed(lambda d: d.update(variables={"source": "{{ 7 * 7 }}"})), "reserved"),
    "reply-content-int": (changed(lambda d: d["requests"][0]["reply"].update(content=5)),
                          "field `requests[0].reply.content`"),
    "stored-message-bad": (changed(lambda d: d["requests"][1]["body"]["messages"].append({"role": "wizard"})),
                           "field `requests[1].body.messages[5].role`"),
    **{f"wrong-type-{key}": (changed(lambda d, k=key, v=value: d.update({k: v})), "")
       for key, value in TOP_LEVEL_WRONG_TYPES.items()},
}

# Valid sessions whose template cannot be used: a clear line, never a traceback.
TEMPLATE_CASES = {
    "template-sandbox-security-error": (template_session("{{ messages.append(1) }}"), "template custom failed"),
    "template-syntax-error": (template_session("{% for m in messages %}{{ m.content }"), "template custom failed"),
    "template-origin-elsewhere": (template_session(None, "custom", f"file:{SAMPLE}"), "has no stored text"),
}


async def settle(pilot, app) -> None:
    """app_helpers.settle, tolerating a rebuild worker that a newer rebuild cancelled while we waited."""
    from textual.worker import WorkerCancelled

    for _ in range(5):
        try:
            return await settle_once(pilot, app)
        except WorkerCancelled:
            continue
    await settle_once(pilot, app)


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write(tmp_path, name: str, content) -> object:
    path = tmp_path / f"{name}.ctxpane.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8", "surrogatepass"))
    return path


def run_in_process(capsys, *argv: str) -> tuple[int, list[str]]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.err.strip().splitlines()


def assert_one_line(code: int, lines: list[str], needle: str) -> None:
    assert code == 2, lines
    assert len(lines) == 1, lines
    assert lines[0].startswith("ctxpane: error: ") and needle in lines[0], lines
    assert "Traceback" not in lines[0]


SESSION_COMMANDS = [["replay", "{f}", "--check"], ["replay", "{f}", "--json"], ["replay", "{f}"],
                    ["export", "{f}", "--format", "markdown"], ["export", "{f}", "--format", "request"],
                    ["export", "{f}", "--format", "curl"], ["export", "{f}", "--format", "document"]]
JSON_COMMANDS = SESSION_COMMANDS + [["render", "{f}"], ["import", "{f}", "-o", "{out}"]]


@pytest.mark.parametrize("name", JSON_CASES)
def test_json_file_problem_every_command(tmp_path, capsys, name):
    content, needle = JSON_CASES[name]
    path = write(tmp_path, name, content)
    before = digest(path)
    for command in JSON_COMMANDS:
        argv = [a.format(f=path, out=tmp_path / "imported.ctxpane.json") for a in command]
        assert_one_line(*run_in_process(capsys, *argv), needle)
        assert digest(path) == before, command
    assert not (tmp_path / "imported.ctxpane.json").exists()


@pytest.mark.parametrize("name", SESSION_CASES)
def test_session_problem_every_session_command(tmp_path, capsys, name):
    content, needle = SESSION_CASES[name]
    key = name.removeprefix("wrong-type-")
    needle = needle or ("not a ctxpane session" if key == "format" else
                        "no valid 'version'" if key == "version" else f"field `{key}`")
    path = write(tmp_path, name, content)
    before = digest(path)
    for command in SESSION_COMMANDS:
        assert_one_line(*run_in_process(capsys, *[a.format(f=path) for a in command]), needle)
    assert digest(path) == before


@pytest.mark.parametrize("name", TEMPLATE_CASES)
def test_template_that_fails_gives_one_line(tmp_path, capsys, name):
    content, needle = TEMPLATE_CASES[name]
    path = write(tmp_path, name, content)
    before = digest(path)
    for command in (["replay", str(path), "--check"], ["replay", str(path), "--json"],
                    ["export", str(path), "--format", "document"]):
        assert_one_line(*run_in_process(capsys, *command), needle)
    assert digest(path) == before


def test_template_origin_is_never_read(tmp_path, capsys):
    """origin "file:PATH" without text: the built-in of that name is used; the file named is never read."""
    spy = tmp_path / "spy.jinja"
    spy.write_text("SPY {{ messages | length }}")
    name = GOOD["template"]["name"]
    path = write(tmp_path, "origin", template_session(None, name, f"file:{spy}"))
    code = main(["replay", str(path), "--json"])
    steps = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert code == 0 and steps and all(step["matches_stored"] for step in steps)
    assert not any("SPY" in step["text"] for step in steps)


def test_template_origin_dev_zero_is_never_read(tmp_path):
    """The issue's case, in a process with bounded memory (reading /dev/zero would otherwise fill the machine)."""
    path = write(tmp_path, "zero", template_session(None, GOOD["template"]["name"], "file:/dev/zero"))
    result = cli(tmp_path, "replay", path, "--check", memory=4 << 30)
    assert result.returncode == 0, result.stderr
    path = write(tmp_path, "zero-custom", template_session(None, "custom", "file:/dev/zero"))
    result = cli(tmp_path, "export", path, "--format", "document", memory=4 << 30)
    assert result.returncode == 2 and "has no stored text" in result.stderr and len(result.stderr.splitlines()) == 1


# -- files that are not regular files, and files that cannot be reached: a real process each ----------------
def cli(tmp_path, *args, without_root_reads=False, timeout=30, memory=None):
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data"), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    prefix = drop_read_override() if without_root_reads else []

    def limit_memory():
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    return subprocess.run([*prefix, sys.executable, "-m", "tui", *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=timeout, cwd=str(ROOT), preexec_fn=limit_memory if memory else None)


def special_file(tmp_path, kind: str):
    if kind == "fifo":
        path = tmp_path / "x.ctxpane.json"
        os.mkfifo(path)
        return path, "not a regular file"
    if kind == "symlink-loop":
        path = tmp_path / "loop.ctxpane.json"
        os.symlink(path, path)
        return path, "symbolic links"
    if kind == "directory":
        path = tmp_path / "dir.ctxpane.json"
        path.mkdir()
        return path, "is a directory"
    if kind == "missing":
        return tmp_path / "nope.ctxpane.json", "no such file"
    folder = tmp_path / "closed"
    folder.mkdir()
    path = folder / "s.ctxpane.json"
    path.write_text(SAMPLE.read_text())
    folder.chmod(stat.S_IRUSR | stat.S_IWUSR)  # readable listing, but not searchable: the file cannot be opened
    return path, "permission denied"


@pytest.mark.parametrize("kind", ["fifo", "symlink-loop", "directory", "missing", "unsearchable-folder"])
@pytest.mark.parametrize("command", [["replay", "--check"], ["replay"], ["export", "--format", "markdown"],
                                     ["export", "--format", "document"], ["render"], ["import"]])
def test_special_files_never_hang_and_give_one_line(tmp_path, kind, command):
    path, needle = special_file(tmp_path, kind)
    if command == ["render"] and kind == "missing":
        needle = "not found"
    try:
        result = cli(tmp_path, command[0], path, *command[1:], without_root_reads=kind == "unsearchable-folder")
    finally:
        (tmp_path / "closed").exists() and (tmp_path / "closed").chmod(0o700)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1 and needle in lines[0], result.stderr
    if kind == "fifo":
        assert stat.S_ISFIFO(os.lstat(path).st_mode)  # left as it was


def test_deep_file_in_a_real_process(tmp_path):
    """In a process of its own (the stack a user's shell gives), 100k levels still give one line."""
    path = write(tmp_path, "deep", JSON_CASES["deep-100k"][0])
    before = digest(path)
    for args in (["replay", path, "--check"], ["render", path]):
        result = cli(tmp_path, *args)
        assert result.returncode == 2 and len(result.stderr.splitlines()) == 1, result.stderr
        assert "nested too deeply" in result.stderr
    assert digest(path) == before


def test_loader_refuses_every_case_with_one_line(tmp_path):
    cases = {**JSON_CASES, **SESSION_CASES}
    for name, (content, _needle) in cases.items():
        path = write(tmp_path, name, content)
        with pytest.raises(SessionFileError) as info:
            load_session(path)
        assert str(info.value).startswith(str(path)) and "\n" not in str(info.value), name
    assert len(cases) + len(TEMPLATE_CASES) + 5 >= 20


# -- the app keeps running ---------------------------------------------------------------------------------------
APP_CASES = ["format-markup", "context-window-string", "tool-calls-oops", "label-list", "dropped-int",
             "deep-100k", "int-5000-digits", "duplicated-key", "template-origin-elsewhere",
             "template-sandbox-security-error"]


@pytest.mark.parametrize("name", APP_CASES)
async def test_app_opens_hostile_file_and_keeps_running(monkeypatch, tmp_path, name):
    isolated(monkeypatch, tmp_path)
    content = {**JSON_CASES, **SESSION_CASES, **TEMPLATE_CASES}[name][0]
    path = write(tmp_path, name, content)
    before = digest(path)
    app = make_app(tmp_path, offline=True, file=path)
    async with app.run_test(size=(150, 42)) as pilot:
        await settle(pilot, app)
        await pilot.press(*"still alive")
        await settle(pilot, app)
        assert any("still alive" in row for row in document_rows(app)) or app.wb.view is None
        if name in TEMPLATE_CASES:  # a valid file whose template cannot be used: opened, and the app lives on
            assert app.session_file == path and app.wb.template.origin == "builtin"
            return
        assert app.session_file != path
        app.autosave(now=True)
    assert digest(path) == before


async def test_app_refuses_a_fifo_without_hanging(monkeypatch, tmp_path):
    isolated(monkeypatch, tmp_path)
    path = tmp_path / "x.ctxpane.json"
    os.mkfifo(path)
    app = make_app(tmp_path, offline=True, file=path)
    async with app.run_test(size=(150, 42)) as pilot:
        await settle(pilot, app)
        assert app.session_file != path
    assert stat.S_ISFIFO(os.lstat(path).st_mode)
