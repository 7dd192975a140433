"""Found by review of the chat habits (issue 19): each of these lost what the user typed, or wrote what it must not."""

from __future__ import annotations

from app_helpers import isolated, make_app, settle
from key_bursts import post as burst
from tui.app.chat.composer import Composer
from tui.context.messages import Message
from tui.sessions.model import Session
from tui.sessions.prompt_history import PromptHistory
from tui.sessions.store import load_session, save_session


def asked() -> Session:
    return Session(title="asked", messages=[Message("user", "first question", id="u0"),
                                            Message("assistant", "ok", id="a0")])


async def opened(tmp_path, monkeypatch):
    isolated(monkeypatch, tmp_path)
    path = tmp_path / "asked.ctxpane.json"
    save_session(asked(), path)
    return make_app(tmp_path, file=path, offline=True)


async def test_keys_typed_right_behind_up_are_kept(tmp_path, monkeypatch):
    app = await opened(tmp_path, monkeypatch)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, app)
        composer = app.query_one(Composer)
        composer.focus()
        burst(app, ["up", *"abc"])
        await settle(pilot, app)
        assert composer.text == "abc"


async def test_ctrl_r_over_a_draft_is_undone_with_ctrl_z(tmp_path, monkeypatch):
    app = await opened(tmp_path, monkeypatch)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, app)
        composer = app.query_one(Composer)
        composer.focus()
        await pilot.press(*"my long draft", "ctrl+r")
        await settle(pilot, app)
        await pilot.press("enter")
        await settle(pilot, app)
        assert composer.text == "first question"
        await pilot.press("ctrl+z")
        assert composer.text == "my long draft"


async def test_keys_behind_tab_and_shift_tab_follow_the_focus_out_of_the_composer(tmp_path, monkeypatch):
    from tui.app.chat.transcript import ChatView
    app = await opened(tmp_path, monkeypatch)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, app)
        composer = app.query_one(Composer)
        composer.focus()
        burst(app, ["shift+tab", "k"])  # k: up a message in the transcript
        await settle(pilot, app)
        assert composer.text == "" and isinstance(app.focused, ChatView) and app.focused.selected == 0
        composer.focus()
        burst(app, [*"/s", "tab", *"ystem be terse"])  # two commands start with s: Tab stays, nothing is lost
        await settle(pilot, app)
        assert composer.text == "/system be terse" and app.focused is composer


async def test_f9_never_sends_a_command_line_and_changes_nothing_while_a_reply_arrives(tmp_path, monkeypatch):
    app = await opened(tmp_path, monkeypatch)
    got = []
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, app)
        app.controller.capabilities.fit_and_send = lambda text: got.append(text) or ""
        composer = app.query_one(Composer)
        for line in ("/clear", "//etc/hosts?"):
            composer.text = line
            await pilot.press("f9")
            await settle(pilot, app)
        assert got == ["/etc/hosts?"]


async def test_f9_while_a_reply_arrives_changes_nothing(tmp_path, monkeypatch):
    from controller_helpers import Harness
    from fault_server import FaultServer
    isolated(monkeypatch, tmp_path)
    with FaultServer(delay=0.0) as server:
        made = Harness(tmp_path, base_url=server.url + "/ok")
        try:
            ctl = await made.ready()
            ctl.connect()
            await made.idle()
            ctl.sending.streaming = True
            before = ctl.wb.policy.name, ctl.history.next_label
            assert "streaming" in ctl.capabilities.fit_and_send("next question")
            assert (ctl.wb.policy.name, ctl.history.next_label) == before
        finally:
            made.ctl.sending.streaming = False
            made.ctl.close()


def test_non_ascii_prompts_come_back_and_an_unreadable_history_is_never_written_over(tmp_path):
    path = tmp_path / "prompts.jsonl"
    history = PromptHistory(path)
    history.add("中" * 14_000, "s1")
    history.write()
    assert [p.text for p in PromptHistory(path).prompts()] == ["中" * 14_000]
    path.write_bytes(b'{"text": "old"}\n' + b"x" * (64 * 1024 * 1024))  # past the read limit: not read
    big = PromptHistory(path)
    assert big.prompts() == [] and big.problem
    big.add("new", "s1")
    big.write()
    assert path.stat().st_size > 64 * 1024 * 1024 and "not written over" in big.problem


async def test_a_placeholder_key_does_not_stop_prompts_being_kept(tmp_path, monkeypatch):
    from test_prompt_history import remembered_after_sending
    isolated(monkeypatch, tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "x")  # llama.cpp takes any key; "x" is everyone's placeholder
    assert "explain the xor trick" in await remembered_after_sending(tmp_path, "explain the xor trick")


def test_an_odd_timing_figure_never_makes_a_session_unreadable(tmp_path):
    from tui.sessions.model import RequestRecord
    session = asked()
    session.requests.append(RequestRecord(number=1, time="2026-12-02T10:00:00", body={"messages": []},
                                          reply={"content": "ok", "first_token_ms": -5, "elapsed_ms": "soon"},
                                          reply_id="a0"))
    path = tmp_path / "odd.ctxpane.json"
    from tui.sessions.store import session_text
    path.write_text(session_text(session))
    from tui.controller.message_facts import read_facts
    loaded = load_session(path).session
    facts = read_facts(loaded.requests[0])
    assert facts.first_token_ms is None and facts.elapsed_ms is None


async def test_arrows_pressed_fast_each_take_a_step(tmp_path, monkeypatch):
    app = await opened(tmp_path, monkeypatch)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, app)
        app.controller.recall.history.add("older prompt", "other")
        composer = app.query_one(Composer)
        composer.focus()
        burst(app, ["up", "up"])
        await settle(pilot, app)
        assert composer.text == "older prompt"
        burst(app, ["down", "down"])
        await settle(pilot, app)
        assert composer.text == ""


async def test_a_transcript_key_moved_by_the_keymap_no_longer_acts(tmp_path, monkeypatch):
    """Found by the second review: the transcript ran its bindings as the class declared them, so after
    `edit_message = "ctrl+g"` both e and Ctrl+G opened the editor."""
    from tui.app.chat.transcript import ChatView
    from tui.app.screens.edit import EditScreen
    app = await opened(tmp_path, monkeypatch)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, app)
        app.set_keymap({"edit_message": "ctrl+g"})
        app.query_one(ChatView).focus()
        await settle(pilot, app)
        burst(app, ["e"])
        await settle(pilot, app)
        assert not isinstance(app.screen, EditScreen)
        burst(app, ["ctrl+g"])
        await settle(pilot, app)
        assert isinstance(app.screen, EditScreen)


async def test_tab_in_the_burst_that_opens_the_settings_moves_to_the_next_field(tmp_path, monkeypatch):
    """Found by the second review: a Tab that reached the settings before a field had focus was run at once,
    found no field, and was lost; the keys behind it went into the first field."""
    from tui.app.screens.settings import SettingsScreen
    app = await opened(tmp_path, monkeypatch)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        app.query_one(Composer).focus()
        burst(app, ["f8", "ctrl+a", "ctrl+k", "1", "2", "tab", "x"])
        await settle(pilot, app)
        assert isinstance(app.screen, SettingsScreen)
        first = app.screen.query_one("#field-context_window")
        assert first.value == "12" and app.focused is not first and app.focused.value.endswith("x")


async def test_keys_typed_behind_enter_in_the_settings_go_to_the_composer(tmp_path, monkeypatch):
    """Found by the second review: Enter applied the form only after the keys behind it were typed into the
    field ("hi" in the context window), so the form was refused and stayed open holding them."""
    from tui.app.screens.settings import SettingsScreen
    app = await opened(tmp_path, monkeypatch)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        app.query_one(Composer).focus()
        burst(app, ["f8"])
        await settle(pilot, app)
        burst(app, ["end", "enter", *"hi"])
        await settle(pilot, app)
        assert not isinstance(app.screen, SettingsScreen) and app.query_one(Composer).text == "hi"


async def test_n_typed_behind_enter_in_the_search_is_the_transcripts(tmp_path, monkeypatch):
    """Found by the second review: the focus left the search box only when the search worker ended, so an n
    typed behind Enter became part of the query ("then")."""
    from tui.app.chat.search import ChatSearch
    from tui.app.chat.transcript import ChatView
    app = await opened(tmp_path, monkeypatch)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, app)
        app.query_one(ChatView).focus()
        burst(app, ["slash", *"que", "enter", "n"])
        await settle(pilot, app)
        assert app.query_one(ChatSearch).value == "que" and isinstance(app.focused, ChatView)
        assert app.query_one(ChatView).matches == [0]
