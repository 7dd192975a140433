"""Every file format ctxpane reads goes through one bounded reader (issue 25): no TOML, JSON or theme file of any
depth or size stops the app or prints a traceback.

Before: a config.toml, a theme or a prices.toml nested 60,000 deep (120 KB, under every size bound) raised
RecursionError: the app died at start, `render --prices` printed a traceback, and through the tap every request
was "not recorded"; a theme file that was a FIFO blocked the start for ever.
"""

from __future__ import annotations

import json
import os

import httpx
import pytest

from app_helpers import isolated, make_app, settle
from tap_helpers import RunningTap, upstream  # noqa: F401 - upstream is a fixture
from tui.context.untrusted.outside_files import FileProblem, parse_json, parse_toml

DEPTH = 60_000
DEEP_TOML = {
    "array": "x = " + "[" * DEPTH + "]" * DEPTH + "\n",
    "inline table": "x = " + "{a = " * DEPTH + "1" + "}" * DEPTH + "\n",
    "dotted key": ".".join(["a"] * DEPTH) + " = 1\n",
    "table header": "[" + ".".join(["a"] * DEPTH) + "]\nx = 1\n",
    "unclosed": "x = " + "[" * DEPTH + "\n",
}


@pytest.mark.parametrize("shape", sorted(DEEP_TOML))
def test_deep_toml_of_every_shape_is_one_line(shape):
    with pytest.raises(FileProblem) as info:
        parse_toml(DEEP_TOML[shape], "config.toml")
    message = str(info.value)
    assert message.startswith("config.toml ") and "\n" not in message and len(message) < 400
    assert "deeply" in message or "not valid TOML" in message


def test_deep_or_huge_json_is_one_line():
    for text in ("[" * DEPTH + "]" * DEPTH, '{"a":' * DEPTH + "1" + "}" * DEPTH, "[" * 70 + "]" * 70):
        with pytest.raises(FileProblem, match="nested too deeply"):
            parse_json(text, "tokenizer_config.json")
    with pytest.raises(FileProblem, match="integer out of range"):
        parse_json('{"n": 1' + "0" * 30 + "}", "x.json")
    with pytest.raises(FileProblem, match="over the"):
        parse_json(" " * 2000, "x.json", limit=1000)
    assert parse_json('{"ok": [1, 2]}', "x.json") == {"ok": [1, 2]}


def write_config_folder(tmp_path, name: str, text: str):
    folder = tmp_path / "xdg_config_home" / "ctxpane"
    (folder / "themes").mkdir(parents=True, exist_ok=True)
    target = folder / name
    target.write_text(text)
    return target


@pytest.mark.parametrize("name", ["config.toml", "themes/deep.toml", "prices.toml"])
async def test_the_app_starts_with_a_deep_file_says_so_and_keeps_the_defaults(tmp_path, monkeypatch, name):
    isolated(monkeypatch, tmp_path)
    write_config_folder(tmp_path, name, "x = " + "[" * 30_000 + "]" * 30_000)  # 60 KB: under a theme's bound
    app = make_app(tmp_path, offline=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press(*"still works")
        await settle(pilot, app)
        assert app.controller.wb.draft == "still works"
        if name != "prices.toml":  # (prices are read when a request is priced: the CLI test below)
            said = [problem for problem in app.problems if "deeply" in problem]
            assert len(said) == 1 and name.split("/")[-1] in said[0] and "\n" not in said[0], app.problems


async def test_a_theme_that_is_a_fifo_is_refused_without_waiting(tmp_path, monkeypatch):
    isolated(monkeypatch, tmp_path)
    themes = tmp_path / "xdg_config_home" / "ctxpane" / "themes"
    themes.mkdir(parents=True)
    os.mkfifo(themes / "pipe.toml")
    app = make_app(tmp_path, offline=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        assert any("pipe.toml" in problem and "not a regular file" in problem for problem in app.problems)


def test_render_with_a_deep_price_table_is_one_line(cli_in_process, tmp_path):
    prices = tmp_path / "deep-prices.toml"
    prices.write_text("x = " + "{a = " * 30_000 + "1" + "}" * 30_000)  # 180 KB: under a price table's bound
    body = tmp_path / "body.json"
    body.write_text(json.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}))
    result = cli_in_process("render", str(body), "--prices", str(prices))
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert result.stderr.count("\n") == 1 and "deeply" in result.stderr


def test_the_tap_records_every_request_with_a_deep_user_price_table(upstream, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    (tmp_path / "config" / "ctxpane").mkdir(parents=True)
    (tmp_path / "config" / "ctxpane" / "prices.toml").write_text(DEEP_TOML["array"])
    tap = RunningTap(upstream.url, tmp_path / "sessions")
    try:
        for n in range(3):
            answer = httpx.post(f"{tap.url}/ok/v1/chat/completions", json={
                "model": "gpt-4o", "messages": [{"role": "user", "content": f"question {n}"}], "stream": True})
            assert answer.status_code == 200
        tap.settle()
        assert tap.recorder.failures == 0
        assert not [t.problem for t in tap.recorder.tapped.values() if t.problem.startswith("not recorded")]
        assert len(list((tmp_path / "sessions").glob("*.json"))) == 3
    finally:
        tap.stop()


# Found by a fresh-eyes review: shapes that got past the first scan, and an error it did not catch.
SLOW_TOML = {
    "dotted digits": "x = " + ".".join(["1"] * 20_000) + "\n",
    "after a multi-line literal closed with extra quotes": "a = '''x''''\n" + ".".join(["b"] * 20_000) + " = 1\n",
    "after an escaped quote in a multi-line basic string": 'a = """\\""""\n' + ".".join(["b"] * 20_000) + " = 1\n",
}


@pytest.mark.parametrize("shape", sorted(SLOW_TOML))
def test_no_toml_shape_reaches_the_slow_parser(shape, monkeypatch):
    import tomllib

    def never(text):
        raise AssertionError("tomllib was given a text the scan should have refused")
    monkeypatch.setattr(tomllib, "loads", never)
    with pytest.raises(FileProblem, match="nested too deeply"):
        parse_toml(SLOW_TOML[shape], "theme.toml")


def test_a_huge_integer_is_one_line_not_a_traceback():
    with pytest.raises(FileProblem, match="theme.toml is not usable TOML"):
        parse_toml("x = " + "1" * 5000, "theme.toml")


def test_legitimate_toml_is_still_read():
    texts = ['a = "x.y.z" # c.d.e\n', 'x = 1.5\nt = 12:00:00.5\n', "a = '''x''''\nb = 1\n", 'a = """\\""""\nb = 2\n',
             "x = {" + ", ".join(f"a{i}.b = {i}" for i in range(100)) + "}\n"]
    for text in texts:
        assert parse_toml(text, "ok.toml")


def test_a_template_or_tokenizer_that_is_a_fifo_is_refused_without_waiting(tmp_path):
    from tui.context.errors import TemplateNotFound
    from tui.context.templates.library import load_template as open_template
    from tui.context.tokens.tokenizers import TokenizerNotFound, get_tokenizer
    for name in ("t.jinja", "tokenizer.json"):
        os.mkfifo(tmp_path / name)
    with pytest.raises(TemplateNotFound, match="not a regular file"):
        open_template(str(tmp_path / "t.jinja"))
    with pytest.raises(TokenizerNotFound, match="not a regular file"):
        get_tokenizer(str(tmp_path / "tokenizer.json"))


def test_a_tool_description_nested_50000_deep_is_compared_not_a_crash():
    from tui.context.cache.causes import _canonical
    deep = "[" * 50_000
    assert _canonical({"description": deep}) == json.dumps({"description": deep}, ensure_ascii=False)
