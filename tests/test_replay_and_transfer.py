"""Replay every sample (headless and in the app), re-send as a new session, import and export."""

import json

import pytest

from app_helpers import document_rows, isolated, make_app, plain
from conftest import ROOT
from test_session_hostile_files import settle  # waits out cancelled rebuild workers
from test_sessions import bad_files, digest
from tui.app.chat.transcript import ChatView
from tui.app.screens.replay import ReplayScreen
from tui.sessions.store import load_session

SAMPLES = sorted((ROOT / "sample_sessions").glob("*.ctxpane.json"))
SIZE = (150, 42)


def test_there_are_at_least_six_samples():
    names = {p.name.split(".")[0] for p in SAMPLES}
    assert len(names) >= 6
    assert {"untrusted-document", "long-conversation-dropped-answer", "forged-tool-result",
            "timestamp-in-system-prompt", "timestamp-at-end", "harmony-reasoning-tool-call",
            "recalled-memories"} <= names


@pytest.mark.parametrize("path", SAMPLES, ids=[p.name for p in SAMPLES])
def test_sample_replays_byte_for_byte(run_cli, path):
    result = run_cli("replay", str(path), "--json")
    assert result.returncode == 0, result.stderr
    steps = [json.loads(line) for line in result.stdout.splitlines()]
    session = load_session(path).session
    assert len(steps) == len(session.requests) >= 1
    for step, record in zip(steps, session.requests):
        assert step["matches_stored"] and step["tokens"] == record.document_tokens


def test_replay_without_check_asks_the_cli_to_open_the_app(monkeypatch):
    """`ctxpane replay FILE --step N`: the command checks the file, the CLI starts the app (commands never import it)."""
    import tui.app.launch
    from tui.cli import main
    from tui.commands.replay import ReplayInApp, run

    asked = []
    monkeypatch.setattr(tui.app.launch, "run_replay", lambda path, step: asked.append((path, step)) or 7)
    assert run([str(SAMPLES[0]), "--step", "2"]) == ReplayInApp(SAMPLES[0], 2)
    assert main(["replay", str(SAMPLES[0]), "--step", "2"]) == 7
    assert asked == [(SAMPLES[0], 2)]


@pytest.mark.parametrize("path", SAMPLES, ids=[p.name for p in SAMPLES])
async def test_sample_opens_and_replays_in_the_app(monkeypatch, tmp_path, path):
    isolated(monkeypatch, tmp_path)
    session = load_session(path).session
    app = make_app(tmp_path, offline=True, file=path, replay=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        assert isinstance(app.screen, ReplayScreen)
        for index, _record in enumerate(session.requests):
            assert app.screen.index == index
            assert app.screen.step_view.matches
            rows = "".join(document_rows(app))
            assert rows.replace("▼ draft (not sent yet)", "").count("<|") >= 1 or "[INST]" in rows
            info = plain(app.screen.query_one("#replay-info"))
            assert f"step {index + 1} of {len(session.requests)}" in info and "byte for byte" in info
            await pilot.press("right")
            await settle(pilot, app)
        assert app.screen.index == len(session.requests) - 1
    assert digest(path) == digest(path)  # opened, never written: samples stay as committed


async def test_replay_play_and_resend_as_new_session(monkeypatch, tmp_path):
    isolated(monkeypatch, tmp_path)
    source = ROOT / "sample_sessions" / "timestamp-at-end.ctxpane.json"
    path = tmp_path / "mine.ctxpane.json"
    path.write_text(source.read_text())
    app = make_app(tmp_path, offline=True, file=path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        app.action_replay(1)
        await settle(pilot, app)
        screen = app.screen
        assert isinstance(screen, ReplayScreen) and screen.index == 1
        screen.speed = 3  # fastest
        await pilot.press("space")
        await settle(pilot, app)
        chat = screen.query_one("#replay-messages", ChatView)
        assert chat.has_reply and not chat.streaming  # the stored reply, shown after the request's messages
        assert "The TGV is fastest" in chat.message_text(-1)
        assert "▶ playing" not in chat.message_text(-1)  # played to its end
        await pilot.press("s")
        await settle(pilot, app)
        assert not isinstance(app.screen, ReplayScreen)
        assert app.wb.session.id != load_session(path).session.id
        assert len(app.wb.session.messages) == load_session(path).session.requests[1].message_count
        assert "re-sent" in app.wb.session.title
    assert len(load_session(path).session.requests) == 4  # the old session is kept as it was


# One of each kind of failure the loader has (not JSON at all, bytes, a field its schema refuses): every bad file
# reaches the app as the same one-line SessionFileError, and each costs an app start (the CLI test has them all).
APP_BAD_FILES = ("truncated", "binary", "bad-request")


async def test_bad_file_in_the_app_keeps_running_and_never_overwrites(monkeypatch, tmp_path):
    isolated(monkeypatch, tmp_path)
    for name, (path, _needle) in bad_files(tmp_path).items():
        if name not in APP_BAD_FILES:
            continue
        before = digest(path)
        app = make_app(tmp_path, offline=True, file=path)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, app)
            assert app.session_file != path
            await pilot.press(*"typing still works")
            await settle(pilot, app)
            assert any("typing still works" in row for row in document_rows(app))
            app.autosave(now=True)
        assert digest(path) == before, name


async def test_newer_version_is_read_only_in_the_app(monkeypatch, tmp_path):
    isolated(monkeypatch, tmp_path)
    data = json.loads((ROOT / "sample_sessions" / "untrusted-document.ctxpane.json").read_text())
    path = tmp_path / "future.ctxpane.json"
    path.write_text(json.dumps({**data, "version": 7}))
    before = digest(path)
    app = make_app(tmp_path, offline=True, file=path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        assert app.read_only and "read-only" in plain(app.query_one("#summary"))
        app.wb.set_system_prompt("changed")
        app.refresh_all()
        app.autosave(now=True)
        await settle(pilot, app)
    assert digest(path) == before


async def test_second_app_on_the_same_session_is_read_only(monkeypatch, tmp_path):
    isolated(monkeypatch, tmp_path)
    path = tmp_path / "shared.ctxpane.json"
    path.write_text((ROOT / "sample_sessions" / "untrusted-document.ctxpane.json").read_text())
    first = make_app(tmp_path, offline=True, file=path)
    async with first.run_test(size=SIZE) as pilot:
        await settle(pilot, first)
        assert first.lock is not None and not first.read_only
        second = make_app(tmp_path, offline=True, file=path)
        async with second.run_test(size=SIZE) as pilot2:
            await settle(pilot2, second)
            assert second.read_only


def test_import_body_and_jsonl_then_export(run_cli, tmp_path):
    body = {"model": "gpt-4o", "max_tokens": 99, "messages": [{"role": "system", "content": "Be brief."},
                                                              {"role": "user", "content": "Hi"}]}
    (tmp_path / "body.json").write_text(json.dumps(body))
    result = run_cli("import", str(tmp_path / "body.json"), "-o", str(tmp_path / "a.ctxpane.json"))
    assert result.returncode == 0, result.stderr
    session = load_session(tmp_path / "a.ctxpane.json").session
    assert [m.role for m in session.messages] == ["system", "user"] and session.model == "gpt-4o"
    assert session.policy["max_tokens"] == 99
    (tmp_path / "msgs.jsonl").write_text('{"role": "user", "content": "one"}\n{"role": "assistant", "content": "two"}\n')
    result = run_cli("import", str(tmp_path / "msgs.jsonl"), "-o", str(tmp_path / "b.ctxpane.json"))
    assert result.returncode == 0 and len(load_session(tmp_path / "b.ctxpane.json").session.messages) == 2
    (tmp_path / "bad.jsonl").write_text('{"role": "user"}\nnot json\n')
    result = run_cli("import", str(tmp_path / "bad.jsonl"))
    assert result.returncode == 2 and "line 2" in result.stderr
    result = run_cli("export", str(tmp_path / "b.ctxpane.json"), "--format", "markdown")
    assert "## 0. user" in result.stdout and "two" in result.stdout


@pytest.mark.parametrize("fmt,needle", [("request", '"messages"'), ("curl", "Bearer $OPENAI_API_KEY"),
                                        ("document", "<|im_start|>system"), ("markdown", "untrusted: tool:web_fetch")])
def test_export_formats(run_cli, tmp_path, fmt, needle):
    sample = ROOT / "sample_sessions" / "forged-tool-result.ctxpane.json"
    out = tmp_path / f"out.{fmt}"
    result = run_cli("export", str(sample), "--format", fmt, "--step", "2", "-o", str(out))
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    assert needle in text
    if fmt == "document":
        import hashlib
        record = load_session(sample).session.requests[1]
        assert hashlib.sha256(text.encode()).hexdigest() == record.document_hash
