"""Slash commands in the composer, with completion; `//` sends a literal slash (issue 19, item 3)."""

from __future__ import annotations

import pytest

from app_helpers import isolated, make_app, settle
from tui.app.chat.composer import Composer
from tui.context.context_grid import CELLS, Kind, context_grid
from tui.controller.slash import COMMANDS, Outcome, Slash, completed, completions, hint, literal, parse


def test_a_line_is_a_command_a_literal_or_a_message():
    assert parse("/model qwen3-7b").kind is Slash.MODEL and parse("/model qwen3-7b").argument == "qwen3-7b"
    assert parse("/SYSTEM be brief\nand kind").argument == "be brief\nand kind"
    assert parse("/system\nline two").argument == "line two"
    assert parse("/compact").kind is Slash.SUMMARISE and parse("/summarize").kind is Slash.SUMMARISE
    assert parse("/etc/hosts says what?").kind is None and parse("/etc/hosts says what?").unknown == "etc/hosts"
    assert parse("//etc/hosts") is None and literal("//etc/hosts") == "/etc/hosts"
    assert parse("hello /model") is None and literal("hello") is None
    assert parse("/").kind is None


def test_completion_completes_the_shared_part_and_a_whole_name_with_its_space():
    assert [c.kind for c in completions("/s")] == [Slash.SYSTEM, Slash.SUMMARISE]
    assert completed("/s") == "/s"  # system and summarise share only "s": nothing more to add
    assert completed("/sy") == "/system "  # it takes an argument: the space is typed for you
    assert completed("/cl") == "/clear"
    assert completed("/zz") is None and completed("/model x") is None and completed("//m") is None
    assert "Tab completes" in hint("/con") and hint("hello") == "" and hint("/model x") == ""
    assert {c.kind for c in COMMANDS} == set(Slash)  # every kind has its line in the help


def test_the_grid_is_the_tokens_tabs_breakdown_in_a_hundred_cells(tmp_path):
    from tui.context.messages import Message
    from tui.context.request import RequestSettings, build_request
    from tui.context.templates.library import builtin_template
    from tui.context.tokens.tokenizers import get_tokenizer
    from tui.context.policy.truncation import PolicySettings
    messages = [Message("system", "Be brief. " * 30, id="s"), Message("user", "hi " * 200, id="u")]
    settings = RequestSettings(builtin_template("qwen3"), get_tokenizer("o200k_base"),
                               policy=PolicySettings(context_window=2000, max_tokens=300))
    view = build_request(messages, settings)
    grid = context_grid(view, 2000, 300)
    tokens = {part.kind: part.tokens for part in grid.parts}
    rows = dict(view.breakdown(2000, 300))
    assert tokens[Kind.SYSTEM] == rows["system"] and tokens[Kind.RESERVED] == 300
    assert tokens[Kind.FREE] == rows["free"] == 2000 - view.sent_tokens - 300
    assert sum(tokens.values()) == 2000 and len(grid.cells()) == CELLS and grid.over == 0
    over = context_grid(view, 100, 300)
    assert over.over == view.sent_tokens + 300 - 100 and len(over.cells()) == CELLS
    assert all(part.cells >= 1 for part in over.parts if part.tokens)  # small, and still seen


@pytest.fixture()
async def app_offline(tmp_path, monkeypatch):
    isolated(monkeypatch, tmp_path)
    app = make_app(tmp_path, offline=True)
    async with app.run_test(size=(140, 40), notifications=True) as pilot:
        await settle(pilot, app)
        yield app, pilot


async def typed(pilot, app, line: str) -> None:
    composer = app.query_one(Composer)
    composer.focus()
    composer.text = line
    await pilot.press("enter")
    await settle(pilot, app)


async def test_commands_change_the_session_and_leave_the_composer_empty(app_offline):
    app, pilot = app_offline
    await typed(pilot, app, "/model my-model-7b")
    assert app.wb.session.model == "my-model-7b" and app.query_one(Composer).text == ""
    await typed(pilot, app, "/template llama3")
    assert app.wb.template.name == "llama3"
    await typed(pilot, app, "/system Answer in French.")
    assert app.controller.system_prompt() == "Answer in French."
    app.controller.history.undo()  # a command is one change in the history, like the dialog it stands for
    assert app.controller.system_prompt() != "Answer in French."
    assert app.wb.session.messages  # the sample the app opens offline
    await typed(pilot, app, "/clear")
    assert app.wb.session.messages == [] and app.wb.session.title == "New session"


async def test_a_mistyped_command_is_said_and_stays_to_be_corrected(app_offline):
    app, pilot = app_offline
    said = []
    shown = app.notify
    app.notify = lambda text, **kw: (said.append(str(text)), shown(text, **kw))
    await typed(pilot, app, "/templat llama3")
    assert app.query_one(Composer).text == "/templat llama3"
    assert any("no command /templat" in line and "//" in line for line in said)
    await typed(pilot, app, "/template no-such-template")
    assert any("no template no-such-template" in line for line in said)
    assert app.query_one(Composer).text == "/template no-such-template"  # found by review: it vanished


async def test_a_model_name_no_session_file_could_keep_is_refused_and_stays(app_offline):
    """Found by review: `/model` and a pasted 5,000 characters wrote a file that could not be opened again."""
    from tui.sessions.store import load_session
    app, pilot = app_offline
    for name in ("m" * 5000, "two\nlines", "esc\x1b[2J"):
        await typed(pilot, app, "/model " + name)
        assert app.query_one(Composer).text == "/model " + name and app.wb.session.model != name
    await typed(pilot, app, "/model fine-model")
    app.autosave(now=True)
    await settle(pilot, app)
    assert load_session(app.session_file).session.model == "fine-model"


async def test_a_command_refused_while_a_reply_arrives_stays_in_the_composer(app_offline):
    app, pilot = app_offline
    app.controller.sending.streaming = True
    try:
        for line in ("/clear", "/system be brief", "/template llama3", "/model other"):
            await typed(pilot, app, line)
            assert app.query_one(Composer).text == line
    finally:
        app.controller.sending.streaming = False


async def test_a_double_slash_sends_the_line_with_one_slash(app_offline):
    app, pilot = app_offline
    sent = []
    app.controller.submit = lambda text: sent.append(text) or True
    await typed(pilot, app, "//etc/hosts is where?")
    assert sent == ["/etc/hosts is where?"]


async def test_tab_completes_and_the_hint_says_what_it_does(app_offline):
    from textual.widgets import Static
    app, pilot = app_offline
    app.query_one(Composer).focus()
    await pilot.press(*"/ret")
    hint_widget = app.query_one("#slash-hint", Static)
    assert "ask the last question again" in str(hint_widget.content) and hint_widget.display
    await pilot.press("tab")
    assert app.query_one(Composer).text == "/retry" and isinstance(app.focused, Composer)
    await pilot.press("ctrl+a", "ctrl+k", *"hello")
    assert not app.query_one("#slash-hint", Static).display


async def test_context_shows_the_grid_of_the_pane_the_user_sees(app_offline):
    from tui.app.screens.context_grid import ContextScreen
    app, pilot = app_offline
    await typed(pilot, app, "/context")
    assert isinstance(app.screen, ContextScreen)
    pane = app.controller.pane_state()
    assert app.screen.grid == context_grid(pane.view, pane.policy.context_window, pane.policy.max_tokens)
    await pilot.press("escape")
    assert not isinstance(app.screen, ContextScreen)


async def test_retry_asks_the_last_question_again_and_keeps_the_old_reply(tmp_path, monkeypatch, llama_server):
    from controller_helpers import Harness
    from tui.sessions.model import Session
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    made = Harness(tmp_path, base_url=llama_server, tokenizer="")
    try:
        # a fixed seed: at a random one the tiny model now and then ends a reply at once, and a reply with no
        # text adds no message (then there is no old reply to keep)
        made.ctl.adopt(Session(params={"temperature": 0.9, "max_tokens": 12, "seed": 7}), None)
        made.ctl.connect()
        await made.idle()
        await made.send("Name a colour.")
        first = made.ctl.wb.session.messages[-1]
        assert made.ctl.slash.run(parse("/retry")) is Outcome.DONE
        await made.until_replied()
        session = made.ctl.wb.session
        assert [m.role for m in session.messages] == ["user", "assistant"] and session.messages[-1] is not first
        assert [m.id for m in session.branches[0].messages] == [first.id]  # the old reply: a branch, kept
        assert len(session.requests) == 2
    finally:
        made.ctl.close()


async def test_the_pane_shows_what_a_line_would_send_never_a_command(app_offline):
    app, pilot = app_offline
    composer = app.query_one(Composer)
    composer.focus()
    await pilot.press(*"/con")
    await settle(pilot, app)
    assert app.wb.draft == ""  # a command is not sent: no draft in the document
    composer.text = "//etc/hosts?"
    await settle(pilot, app)
    assert app.wb.draft == "/etc/hosts?"
    composer.text = "plain words"
    await settle(pilot, app)
    assert app.wb.draft == "plain words"
