"""Prompt history: Up/Down in an empty composer, this session's questions then other sessions', and Ctrl+R to
search them (issue 19, item 3). The history file is outside input when read back."""

from __future__ import annotations

import json
import os

from app_helpers import isolated, make_app, settle
from tui.app.chat.composer import Composer
from tui.context.messages import Message
from tui.sessions.model import Session
from tui.sessions.prompt_history import MAX_KEPT, MAX_PROMPT, PromptHistory, history_file
from tui.sessions.store import save_session


def test_prompts_are_kept_newest_last_once_each_and_bounded(tmp_path):
    path = tmp_path / "prompts.jsonl"
    history = PromptHistory(path)
    for text in ("one", "two", "one"):
        assert history.add(text, "s1")
    history.write()
    assert [p.text for p in PromptHistory(path).prompts()] == ["two", "one"]  # a repeat moves to the newest
    assert os.stat(path).st_mode & 0o777 == 0o600
    for number in range(MAX_KEPT + 5):
        history.add(f"p{number}", "s1")
    history.write()
    again = PromptHistory(path).prompts()
    assert len(again) == MAX_KEPT and again[-1].text == f"p{MAX_KEPT + 4}"


def test_a_prompt_with_the_key_or_a_pasted_file_is_never_written(tmp_path):
    history = PromptHistory(tmp_path / "prompts.jsonl")
    assert not history.add("my key is sk-secret-123", "s1", ["sk-secret-123"])
    assert not history.add("x" * (MAX_PROMPT + 1), "s1") and not history.add("   ", "s1")
    history.write()
    assert "sk-secret" not in (tmp_path / "prompts.jsonl").read_text()


def test_a_hostile_history_file_gives_what_it_can_and_never_blocks(tmp_path):
    path = tmp_path / "prompts.jsonl"
    lines = ["not json", json.dumps([1, 2]), json.dumps({"text": 7}), json.dumps({"text": "y" * (MAX_PROMPT + 1)}),
             json.dumps({"text": "kept", "session": {"no": 1}}), "{" * 100_000, json.dumps({"text": "\x1b[2Jalso"})]
    path.write_text("\n".join(lines) + "\n")
    assert [p.text for p in PromptHistory(path).prompts()] == ["kept", "\x1b[2Jalso"]  # escaped where it is shown
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    blocked = PromptHistory(fifo)
    assert blocked.prompts() == [] and blocked.problem  # refused, said, not waited on


def session_with(*questions: str) -> Session:
    messages = []
    for number, question in enumerate(questions):
        messages += [Message("user", question, id=f"u{number}"), Message("assistant", "ok", id=f"a{number}")]
    return Session(title="asked", messages=messages)


async def test_up_and_down_step_through_this_sessions_questions_then_the_others(tmp_path, monkeypatch):
    isolated(monkeypatch, tmp_path)
    other = PromptHistory(history_file())
    other.add("from another session", "other")
    other.write()
    path = tmp_path / "asked.ctxpane.json"
    save_session(session_with("first question", "second question"), path)
    app = make_app(tmp_path, file=path, offline=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        composer = app.query_one(Composer)
        composer.focus()
        shown = []
        for _ in range(4):
            await pilot.press("up")
            shown.append(composer.text)
        assert shown == ["second question", "first question", "from another session", "from another session"]
        await pilot.press("down", "down")
        assert composer.text == "second question"
        await pilot.press("down")
        assert composer.text == ""
        await pilot.press(*"typed", "up")  # a draft of one's own: Up moves the cursor, the draft stays
        assert composer.text == "typed"


async def test_ctrl_r_finds_a_prompt_and_puts_it_in_the_composer(tmp_path, monkeypatch):
    from tui.app.screens.prompt_search import PromptSearchScreen
    isolated(monkeypatch, tmp_path)
    path = tmp_path / "asked.ctxpane.json"
    save_session(session_with("how big is the quota", "what about pricing"), path)
    app = make_app(tmp_path, file=path, offline=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("ctrl+r")
        assert isinstance(app.screen, PromptSearchScreen)
        await pilot.press(*"QUOTA")
        assert app.screen.found == ["how big is the quota"]
        await pilot.press("enter")
        assert not isinstance(app.screen, PromptSearchScreen)
        assert app.query_one(Composer).text == "how big is the quota"


async def remembered_after_sending(tmp_path, text: str) -> list[str]:
    """Send `text` to a loopback server as the user would; the prompts the history file holds after it."""
    from controller_helpers import Harness
    from fault_server import FaultServer
    with FaultServer(delay=0.0) as server:
        made = Harness(tmp_path, base_url=server.url + "/ok")
        try:
            await made.ready()
            made.ctl.connect()
            await made.idle()
            await made.send(text)
            await made.idle()
        finally:
            made.ctl.close()
    return [p.text for p in PromptHistory(history_file()).prompts()]


async def test_what_is_sent_is_remembered_for_the_next_session(tmp_path, monkeypatch):
    isolated(monkeypatch, tmp_path)
    assert "remember me please" in await remembered_after_sending(tmp_path, "remember me please")
