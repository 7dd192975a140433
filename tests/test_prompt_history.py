"""Prompt history: Up/Down in an empty composer, this session's questions then other sessions', and Ctrl+R to
search them (issue 19, item 3). The history file is outside input when read back."""

from __future__ import annotations

import json
import os
from pathlib import Path

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


def test_a_prompt_with_the_key_is_kept_masked_and_a_pasted_file_is_never_written(tmp_path):
    history = PromptHistory(tmp_path / "prompts.jsonl")
    assert history.add("my key is sk-secret-123", "s1", ["sk-secret-123"])
    assert not history.add("x" * (MAX_PROMPT + 1), "s1") and not history.add("   ", "s1")
    history.write()
    assert "sk-secret" not in (tmp_path / "prompts.jsonl").read_text()
    assert [p.text for p in PromptHistory(tmp_path / "prompts.jsonl").prompts()] == ["my key is ***"]


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


async def remembered_after_sending(tmp_path, text: str, **settings) -> list[str]:
    """Send `text` to a loopback server as the user would; the prompts the history file holds after it."""
    from controller_helpers import Harness
    from fault_server import FaultServer
    with FaultServer(delay=0.0) as server:
        made = Harness(tmp_path, base_url=server.url + "/ok", **settings)
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


# issue 41, item 3: the history holds no key, attached to the connection or not, and two apps lose nothing
KEY = "sk-proj-Q7fLm2Xw9RtB4kZp8VhN3cYd6JsE1uGa"


def holds_no_part_of(text: str, key: str) -> bool:
    """No form of `key` in `text`: whole, its first 10 characters, or any 8 characters of it once spaces and line
    breaks (raw or JSON-escaped) are taken out."""
    compact = "".join(text.replace("\\n", "\n").split())
    body = key[len("sk-proj-"):]
    return key not in text and key[:10] not in text and not any(
        body[at:at + 8] in compact for at in range(len(body) - 7))


def key_in_every_form() -> str:
    return f"use {KEY} please; its start {KEY[:10]}; folded {KEY[:20]}\n{KEY[20:]} and spaced {' '.join(KEY[8:30])}"


async def test_a_prompt_with_the_key_not_attached_to_the_connection_is_masked(tmp_path, monkeypatch):
    isolated(monkeypatch, tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)  # the URL comes from no flag, no config: the key is not sent there
    kept = await remembered_after_sending(tmp_path, key_in_every_form())
    assert any(text.startswith("use *** please") for text in kept)
    assert holds_no_part_of(history_file().read_text(), KEY)


async def test_a_key_in_the_variable_the_settings_name_is_masked_too(tmp_path, monkeypatch):
    isolated(monkeypatch, tmp_path)
    monkeypatch.setenv("MY_LLM_KEY", KEY)  # named by config.toml or --api-key-env, still in the environment
    await remembered_after_sending(tmp_path, key_in_every_form(), api_key_env="MY_LLM_KEY")
    assert holds_no_part_of(history_file().read_text(), KEY)


def test_a_key_withdrawn_under_any_name_is_masked_with_no_connection(tmp_path, monkeypatch):
    from tui.client import keys
    isolated(monkeypatch, tmp_path)
    monkeypatch.setitem(keys._held, "MY_LLM_KEY", KEY)  # named by config.toml, taken out of the environment
    history = PromptHistory(tmp_path / "prompts.jsonl")
    assert history.add(key_in_every_form(), "s1")  # offline: no connection, no key given
    history.write()
    assert holds_no_part_of((tmp_path / "prompts.jsonl").read_text(), KEY)


def test_an_older_line_holding_the_key_is_masked_when_the_file_is_written_again(tmp_path, monkeypatch):
    isolated(monkeypatch, tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    path = tmp_path / "prompts.jsonl"
    path.write_text(json.dumps({"text": f"old {KEY}", "session": "s0"}) + "\n")
    history = PromptHistory(path)
    history.add("new", "s1")
    history.write()
    assert [p.text for p in PromptHistory(path).prompts()] == ["old ***", "new"]


APPEND_50 = """
import sys
from pathlib import Path
from tui.sessions.prompt_history import PromptHistory
history = PromptHistory(Path(sys.argv[1]))
for number in range(50):
    history.add(f"app {sys.argv[2]} prompt {number}", sys.argv[2])
    history.write()
    assert not history.problem, history.problem
"""


def test_two_apps_appending_at_once_lose_nothing(tmp_path):
    import subprocess
    import sys
    path = tmp_path / "prompts.jsonl"
    apps = [subprocess.Popen([sys.executable, "-c", APPEND_50, str(path), name], cwd=Path(__file__).resolve().parent.parent,
                             stderr=subprocess.PIPE, text=True) for name in ("a", "b")]
    for app in apps:
        assert app.wait(timeout=120) == 0, app.stderr.read()
    texts = {p.text for p in PromptHistory(path).prompts()}
    assert texts == {f"app {name} prompt {number}" for name in "ab" for number in range(50)}


def test_the_bound_keeps_the_newest_when_apps_merge(tmp_path):
    path = tmp_path / "prompts.jsonl"
    first, second = PromptHistory(path), PromptHistory(path)
    first.prompts(), second.prompts()  # both read the empty file before either writes
    for number in range(MAX_KEPT):
        first.add(f"first {number}", "s1")
    first.write()
    second.add("second", "s2")
    second.write()
    kept = [p.text for p in PromptHistory(path).prompts()]
    assert len(kept) == MAX_KEPT and kept[0] == "first 1" and kept[-1] == "second"
