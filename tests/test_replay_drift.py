"""Replay drift: each stored body against a fresh rendering of that same body. Only the template or the
tokenizer can drift; editing the session after its requests never does. Each test failed on main, except
the last, which guards a case main already got right."""

import json

import pytest

from conftest import ROOT
from tui.context.templates.library import builtin_template
from tui.cli import main

SAMPLES = sorted((ROOT / "sample_sessions").glob("*.ctxpane.json"))
FORGED = ROOT / "sample_sessions" / "forged-tool-result.ctxpane.json"
HARMONY = ROOT / "sample_sessions" / "harmony-reasoning-tool-call.ctxpane.json"


def copy_with(tmp_path, source, change) -> str:
    data = json.loads(source.read_text(encoding="utf-8"))
    change(data)
    path = tmp_path / "copy.ctxpane.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def replay_json(capsys, *args) -> tuple[int, list[dict]]:
    code = main(["replay", *args, "--json"])
    return code, [json.loads(line) for line in capsys.readouterr().out.splitlines()]


@pytest.mark.parametrize("path", SAMPLES, ids=[p.name for p in SAMPLES])
def test_no_sample_reports_drift(capsys, path):
    """timestamp-in-system-prompt edits its system prompt every turn: main called that drift."""
    code, steps = replay_json(capsys, str(path))
    assert code == 0 and steps and all(step["drift"] is None for step in steps)


def edit_everything_but_the_requests(data):
    data["messages"][0]["content"] = "A new system prompt, written after every request."
    del data["messages"][-1]
    data["messages"].append({"role": "user", "content": "a later question", "id": "later"})
    data["fences"] = not data["fences"]
    data["policy"] = {**data["policy"], "name": "drop-oldest", "context_window": 60}
    data["tools"] = [{"type": "function", "function": {"name": "added_later"}}]


def test_a_session_edited_after_its_requests_reports_no_drift(tmp_path, capsys):
    path = copy_with(tmp_path, FORGED, edit_everything_but_the_requests)
    code, steps = replay_json(capsys, path)
    assert code == 0 and [s["drift"] for s in steps] == [None, None] and all(s["matches_stored"] for s in steps)
    assert main(["replay", path, "--check"]) == 0
    assert all("drift: none" in line for line in capsys.readouterr().out.splitlines())


def test_another_template_drifts_and_says_where(tmp_path, capsys):
    code, steps = replay_json(capsys, str(HARMONY), "--template", "chatml")
    assert code == 1
    drift = steps[0]["drift"]
    assert drift["kind"] == "template" and drift["line"] == 1
    assert drift["stored"].startswith("<|start|>system") and drift["fresh"].startswith("<|im_start|>system")


def test_a_changed_stored_template_drifts_against_the_built_in_it_was_sent_with(tmp_path, capsys):
    """The file's template text was edited after the requests: the built-in named in each record still
    reproduces the stored hash, so the first differing line is shown."""
    edited = builtin_template("qwen3").source.replace("<|im_start|>system", "<|im_start|>SYSTEM")

    def change(data):
        data["template"] = {"name": "my-qwen3", "origin": "file:/elsewhere/qwen3.jinja", "text": edited}

    path = copy_with(tmp_path, FORGED, change)
    code, steps = replay_json(capsys, path)
    assert code == 1 and not steps[0]["matches_stored"]
    drift = steps[0]["drift"]
    assert drift["kind"] == "template" and drift["line"] == 1 and "SYSTEM" in drift["fresh"]
    assert main(["replay", path, "--check"]) == 1
    assert "drift: template, at line 1" in capsys.readouterr().out


def test_a_changed_count_is_tokenizer_drift(tmp_path, capsys):
    def change(data):
        data["requests"][1]["document_tokens"] += 5

    path = copy_with(tmp_path, FORGED, change)
    code, steps = replay_json(capsys, path)
    assert code == 1 and steps[0]["drift"] is None and steps[1]["matches_stored"]
    assert steps[1]["drift"]["kind"] == "tokenizer"
    assert steps[1]["drift"]["stored"] == f"{steps[1]['tokens_stored']} tokens"
    assert main(["replay", path, "--check"]) == 1
    assert "drift: tokenizer" in capsys.readouterr().out.splitlines()[1]


def test_counting_with_another_tokenizer_is_not_drift(capsys):
    """A tokenizer the user picks is a what-if: its count is shown, never compared (main passed this)."""
    code, steps = replay_json(capsys, str(FORGED), "--tokenizer", "cl100k_base")
    assert code == 0 and all(step["drift"] is None for step in steps)
    assert steps[1]["tokens"] != steps[1]["tokens_stored"]


def test_without_a_template_that_reproduces_the_document_only_the_hashes_are_shown(tmp_path, capsys):
    edited = builtin_template("qwen3").source.replace("<|im_start|>system", "<|im_start|>SYSTEM")

    def change(data):
        data["template"] = {"name": "my-qwen3", "origin": "server:llama.cpp", "text": edited}
        for record in data["requests"]:
            record["template"] = "server:llama.cpp"  # names no built-in

    path = copy_with(tmp_path, FORGED, change)
    code, steps = replay_json(capsys, path)
    drift = steps[0]["drift"]
    assert code == 1 and drift["kind"] == "template" and drift["line"] is None
    assert drift["stored"].startswith("sha256 ") and drift["stored"] != drift["fresh"]
    assert main(["replay", path, "--check"]) == 1
    assert "only the hashes differ" in capsys.readouterr().out
