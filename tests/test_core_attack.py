"""Attacks on the rebuilt core (issue 10): each test is a defect found by a hostile user or reader.

Controller tests run on a plain asyncio loop (tests/controller_helpers.py); pilot tests drive the app.
"""

from __future__ import annotations

import asyncio

import pytest

from controller_helpers import Harness, connected, conversation, harness  # noqa: F401 - harness is a fixture
from fault_server import FaultServer
from tui.controller.events import Notice, ReplyEnded, ReplyGrew, ReplyStarted
from tui.sessions.store import load_session
from waiting import eventually


async def _first_progress(made: Harness) -> None:
    await eventually(lambda: made.of(ReplyGrew), 10, "a reply to arrive")


async def _until_done(made: Harness) -> None:
    await made.until_replied()


@pytest.mark.parametrize("how", ["new session", "open file"])
async def test_switching_session_while_streaming_is_refused(tmp_path, monkeypatch, how):
    """Opening another session while a reply streams drew the rest of the reply into the other session and
    never saved it in its own: now the switch is refused (said), as a second send is."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FaultServer(delay=0.1) as server:
        made = await connected(tmp_path, server.url + "/slow")
        ctl = made.ctl
        other = tmp_path / "other.ctxpane.json"
        from tui.sessions.store import save_session
        save_session(conversation(), other)
        assert ctl.submit("tell me a story")
        await _first_progress(made)
        first = ctl.wb.session
        ctl.new_session() if how == "new session" else ctl.open_file(other)
        await _until_done(made)
        assert ctl.wb.session is first and first.messages[-1].text() == "partial reply kept"
        assert any("still streaming" in e.text for e in made.of(Notice))
        ctl.close()


async def test_a_reply_that_ends_after_another_session_opened_stays_in_its_own(tmp_path, monkeypatch):
    """A session adopted while a reply streams (its file was being read when the send began): nothing of the
    reply is shown in it, and all of the reply (not only what had arrived) is saved in its own file."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FaultServer(delay=0.1) as server:
        made = await connected(tmp_path, server.url + "/slow")
        ctl = made.ctl
        assert ctl.submit("tell me a story")
        await _first_progress(made)
        first_file = ctl.file.session_file
        ctl.file.autosave(now=True)
        ctl.adopt(conversation(), None)  # what _open_file ends in
        switched = len(made.events)
        await _until_done(made)
        after = made.events[switched:]
        assert not [e for e in after if isinstance(e, (ReplyGrew, ReplyStarted, ReplyEnded))], \
            "the old session's reply is streamed into the newly opened one"
        assert ctl.wb.session.messages[-1].text() == "And the price?"
        saved = load_session(first_file).session
        assert saved.messages[-1].role == "assistant"
        assert saved.messages[-1].text() == "partial reply kept", "the end of the reply was never saved"
        assert saved.requests[-1].reply["content"] == "partial reply kept"
        ctl.close()


# -- quitting while a reply streams (the app) ---------------------------------------------------------------

async def test_quit_while_a_reply_streams_keeps_all_that_arrived(tmp_path, monkeypatch):
    """Ctrl+Q mid-reply: the file holds the user's message and every piece of the reply shown on screen,
    not only what the last once-a-second checkpoint saved."""
    from app_helpers import isolated, make_app, settle
    from tui.sessions.model import recover_interrupted_reply
    isolated(monkeypatch, tmp_path)
    with FaultServer(delay=0.3) as server:
        app = make_app(tmp_path, flags={"base_url": f"{server.url}/slow"})
        async with app.run_test(size=(120, 30)) as pilot:
            await settle(pilot, app)
            await pilot.press(*"tell me", "enter")
            view = app.query_one("ChatView")
            await eventually(lambda: view._live is not None and "reply" in view._live.content, 10,
                             "the reply's second piece on screen", pilot=pilot)
            shown = view._live.content
            assert shown.startswith("partial reply")
            path = app.session_file
            await pilot.press("ctrl+q")
        session = load_session(path).session
        recover_interrupted_reply(session)
        assert session.messages[0].text() == "tell me"
        assert session.messages[-1].role == "assistant" and session.messages[-1].text().startswith(shown), \
            (session.messages[-1].text(), shown)


@pytest.mark.parametrize("action", ["delete", "edit"])
async def test_the_message_a_reply_answers_cannot_change_under_it(tmp_path, monkeypatch, action):
    """Deleting (or rewriting) the user's message while its reply streams left the reply answering a message
    that no longer exists: two assistant replies in a row, or a reply to a question never asked."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FaultServer(delay=0.1) as server:
        made = await connected(tmp_path, server.url + "/slow")
        ctl = made.ctl
        assert ctl.submit("tell me a story")
        await _first_progress(made)
        index = len(ctl.wb.session.messages) - 1
        asked = ctl.wb.session.messages[index]
        if action == "delete":
            ctl.delete(index, asked)
        else:
            ctl.edit(index, "something else entirely", asked)
        await _until_done(made)
        messages = ctl.wb.session.messages
        assert messages[-1].role == "assistant"
        assert messages[-2].role == "user" and messages[-2].text() == "tell me a story"
        sent = ctl.wb.session.requests[-1].body["messages"][-1]["content"]
        assert sent == messages[-2].text()
        ctl.close()


async def test_a_document_attached_while_a_reply_streams_does_not_split_question_and_reply(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FaultServer(delay=0.1) as server:
        made = await connected(tmp_path, server.url + "/slow")
        ctl = made.ctl
        assert ctl.submit("tell me a story")
        await _first_progress(made)
        ctl.attach("Quota: 250 GB.", "file:notes.txt")
        await _until_done(made)
        messages = ctl.wb.session.messages
        assert messages[-1].role == "assistant" and messages[-2].text() == "tell me a story"
        ctl.close()


async def test_a_save_that_fails_is_said_and_quitting_reports_it(harness, tmp_path):
    """The session's file replaced by a directory: the failed save is told, and quitting says it too."""
    from tui.controller.events import Notice
    from tui.sessions.store import save_session
    path = tmp_path / "s.ctxpane.json"
    save_session(conversation(), path)
    ctl = await harness.ready(load_session(path).session, path)
    path.unlink()
    path.mkdir()
    ctl.edit(1, "changed")
    await harness.idle()
    assert any("could not save" in e.text for e in harness.of(Notice)), [e.text for e in harness.of(Notice)]
    ctl.edit(1, "changed again")
    ctl.close()
    assert ctl.file.save_failure and "could not save" in ctl.file.save_failure


async def test_a_slow_local_tokenizer_load_never_replaces_the_servers_own(tmp_path, monkeypatch):
    """At start-up the local tokenizer loads while the app connects. When the server's own (exact) tokenizer
    arrives first, the local one finishing later must not take its place."""
    import time

    import tui.controller.tokenizing as tokenizing
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    real = tokenizing.get_tokenizer

    def slow(spec):
        time.sleep(3)  # the local load outlasts the connection: what the test is about
        loaded.append(spec)
        return real(spec)
    loaded = []
    monkeypatch.setattr(tokenizing, "get_tokenizer", slow)
    with FaultServer(delay=0.01) as server:
        made = Harness(tmp_path, base_url=server.url + "/llama", tokenizer="")
        ctl = made.ctl
        ctl.adopt(conversation(), None)
        ctl.load_tokenizer()  # as _after_first_frame does: the load first, then connect
        ctl.connect()
        # not made.idle(): it would wait for the slow load too
        await eventually(lambda: ctl.client is not None and ctl.wb.exact, 4, "the server's tokenizer")
        assert ctl.wb.exact and not loaded, "the server's tokenizer never came before the local one"
        server_tokenizer = ctl.wb.tokenizer
        await eventually(lambda: loaded, 10, "the local load to end")
        await made.idle()  # and what the controller does with it
        assert ctl.wb.tokenizer is server_tokenizer and ctl.wb.exact, \
            f"{ctl.wb.tokenizer.name} (exact={ctl.wb.exact}) replaced the server's {server_tokenizer.name}"
        ctl.close()


# -- the chat view at the edges -------------------------------------------------------------------------------

async def test_the_chat_view_survives_deletes_under_the_cursor_a_tiny_screen_and_an_empty_session():
    from test_chat_view import PanelHarness, numbered
    from tui.app.chat.panel import ChatPanel
    from tui.app.chat.transcript import ChatView
    from tui.app.messages import ChatUpdated, ReplyArrived, ReplyBegan, ReplyFinished
    from tui.controller.snapshot import ChatState
    app = PanelHarness()
    messages = tuple(numbered(10_000, words=2).messages)
    async with app.run_test(size=(80, 24)) as pilot:
        panel = app.query_one(ChatPanel)
        panel.post_message(ChatUpdated(ChatState(0, messages)))
        await pilot.pause()
        chat = app.query_one(ChatView)
        chat.focus()
        await pilot.press("end")
        assert chat.selected == 9999
        panel.post_message(ChatUpdated(ChatState(1, messages[:5000])))  # the selected half deleted
        panel.post_message(ReplyBegan())
        panel.post_message(ReplyArrived(ReplyGrew("a reply " * 50)))
        await pilot.pause()
        assert chat.selected == 4999 and panel.focused()[0] == 4999
        await pilot.press("down", "pagedown", "enter", "up", "pageup", "home", "end")
        await pilot.resize_terminal(20, 5)
        await pilot.pause()
        await pilot.press("pageup", "up", "down", "end", "enter")
        assert chat.visible_lines() and chat.selected is not None and chat.selected < 5000
        panel.post_message(ReplyFinished())
        panel.post_message(ChatUpdated(ChatState(2, ())))  # everything deleted
        await pilot.pause()
        await pilot.press("up", "down", "pageup", "pagedown", "home", "end", "enter", "e", "d")
        assert chat.selected is None and panel.focused() is None
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        assert len(chat.visible_lines()) == chat.size.height


async def test_export_turns_the_session_into_markdown_off_the_event_loop(harness, tmp_path, monkeypatch):
    """Export wrote the file in a thread but built the Markdown on the loop: 0.35 s frozen for a 20 MB session."""
    import threading

    import tui.sessions.transfer as transfer
    ctl = await harness.ready()
    real, threads = transfer.export_markdown, []

    def spy(session):
        threads.append(threading.current_thread())
        return real(session)
    monkeypatch.setattr(transfer, "export_markdown", spy)
    ctl.export_markdown()
    await harness.idle()
    assert threads and threads[0] is not threading.main_thread()
    assert list((tmp_path / "sessions").glob("*.md"))


def test_a_20_mb_session_is_laid_out_and_resized_without_wrapping_it():
    """Opening, resizing and deleting in a 10,000-message session wrap nothing: rows are guessed until read (how
    long that takes is a benchmark's, tests/benchmarks/bench_transcript.py; this checks the mechanism)."""
    from tui.app.chat.layout import ChatLayout
    from tui.context.messages import Message
    messages = [Message("user" if i % 2 == 0 else "assistant", "word " * 400 + str(i), id=f"m{i}")
                for i in range(10_000)]
    layout = ChatLayout()
    for shown, width in ((messages, 60), (messages, 40), (messages[1:], 40)):  # open, resize, delete the first
        layout.update(shown, set(), {}, {}, width)
        wrapped = [entry for entry in layout.entries if entry._body is not None or entry._head is not None]
        assert len(layout.entries) == len(shown) and not wrapped, len(wrapped)
        assert layout.height >= len(shown) * 3  # a guess of each message's rows, not one row each


@pytest.mark.parametrize("change", ["edit", "template", "tokenizer", "open another", "draft"])
async def test_a_computation_under_way_never_lands_over_a_newer_state(harness, change):
    """The worker is held inside a computation while the state changes; when it is let go, the pane ends
    with the newer state's view, and no view of the older state is shown after the change."""
    import threading

    from tui.controller.events import PaneChanged
    from tui.sessions.model import Session
    ctl = await harness.ready()
    gate, entered = threading.Event(), threading.Event()
    real = type(ctl.wb).compute

    def held(self, *args, **kwargs):
        if not gate.is_set():
            entered.set()
            gate.wait(10)
        return real(self, *args, **kwargs)
    type(ctl.wb).compute = held
    try:
        ctl.set_draft("first draft")
        await asyncio.to_thread(entered.wait, 10)
        mark = len(harness.events)
        if change == "edit":
            ctl.edit(1, "What is the NEW quota?")
            wanted = "What is the NEW quota?"
        elif change == "template":
            ctl.set_template("llama3")
            wanted = "<|start_header_id|>"
        elif change == "tokenizer":
            from tui.context.tokens.counting import get_tokenizer
            ctl.use_tokenizer(get_tokenizer("cl100k_base"), None)
            wanted = "first draft"
        elif change == "open another":
            from tui.context.messages import Message
            ctl.adopt(Session(messages=[Message("user", "another session entirely", id="x1")]), None)
            wanted = "another session entirely"
        else:
            ctl.set_draft("second draft")
            wanted = "second draft"
        gate.set()
        await harness.idle()
    finally:
        type(ctl.wb).compute = real
    panes = [e.pane for e in harness.events[mark:] if isinstance(e, PaneChanged)]
    assert panes and wanted in panes[-1].view.document.text
    assert all(p.generation >= panes[0].generation for p in panes)
    assert ctl.wb.view is panes[-1].view
    if change == "tokenizer":
        assert panes[-1].view.snapshot.counts is not None and ctl.wb.tokenizer.name == "cl100k_base"


async def test_resend_offline_says_why_nothing_happens(harness):
    from tui.controller.events import Notice
    ctl = await harness.ready()
    before = len(harness.of(Notice))
    ctl.resend_from(3)
    assert len(harness.of(Notice)) > before and "offline" in harness.of(Notice)[-1].text


async def test_the_edit_dialog_is_not_opened_while_a_reply_streams(tmp_path, monkeypatch):
    """Edit (e) on a message while a reply streams: refused when the key is pressed, not after the user has
    typed the whole edit into the dialog (which the controller would then refuse)."""
    from app_helpers import isolated, make_app, settle
    from tui.app.chat.transcript import ChatView
    from tui.app.screens.edit import EditScreen
    isolated(monkeypatch, tmp_path)
    with FaultServer(delay=0.3) as server:
        app = make_app(tmp_path, flags={"base_url": f"{server.url}/slow"})
        async with app.run_test(size=(120, 30), notifications=True) as pilot:
            await settle(pilot, app)
            await pilot.press(*"tell me", "enter")
            await eventually(lambda: app.controller.streaming and app.query_one(ChatView).has_reply, 10,
                             "the reply to start", pilot=pilot)
            app.query_one(ChatView).focus()
            await pilot.press("home", "e")
            await pilot.pause()
            assert not isinstance(app.screen, EditScreen)
            assert any("still streaming" in n.message for n in app._notifications)
            app.controller.stop()
            await settle(pilot, app)


async def test_a_slow_open_does_not_replace_a_session_started_after_it(harness, tmp_path, monkeypatch):
    """Open a big session (its file is read in a thread), then New session before the read ends: the session
    the user asked for last stays open; the older request does not land over it a moment later."""
    import threading

    import tui.controller.opening as opening
    from tui.sessions.store import save_session
    ctl = await harness.ready()
    path = tmp_path / "big.ctxpane.json"
    save_session(conversation(), path)
    real = opening.load_session
    reading, read_on, read = threading.Event(), threading.Event(), threading.Event()

    def slow(p):  # held until the test has started the new session
        reading.set()
        read_on.wait(10)
        try:
            return real(p)
        finally:
            read.set()
    monkeypatch.setattr(opening, "load_session", slow)
    ctl.open_file(path)
    assert await asyncio.to_thread(reading.wait, 10), "the file was never read"
    ctl.new_session()
    assert ctl.wb.session.messages == []
    read_on.set()
    assert await asyncio.to_thread(read.wait, 10)
    await harness.idle()
    assert ctl.wb.session.messages == [] and ctl.file.session_file != path, "the older open landed over the new session"


async def test_a_file_attached_lands_in_the_session_it_was_attached_to(harness, tmp_path, monkeypatch):
    """file:PATH is read in a thread; a session opened before the read ends must not receive the document."""
    import threading

    import tui.controller.attaching as attaching
    from tui.sessions.model import Session
    ctl = await harness.ready()
    notes = tmp_path / "notes.txt"
    notes.write_text("Quota: 250 GB.")
    real = attaching.read_attachment
    reading, read_on, read = threading.Event(), threading.Event(), threading.Event()

    def slow(path, *args, **kwargs):  # the document's read held until the other session is open
        reading.set()
        read_on.wait(10)
        try:
            return real(path, *args, **kwargs)
        finally:
            read.set()
    monkeypatch.setattr(attaching, "read_attachment", slow)
    ctl.attach("", f"file:{notes}")
    assert await asyncio.to_thread(reading.wait, 10), "the document was never read"
    ctl.adopt(Session(title="another"), None)
    read_on.set()
    assert await asyncio.to_thread(read.wait, 10)
    await harness.idle()
    assert ctl.wb.session.messages == [], "the document was attached to the session opened meanwhile"


async def test_what_is_typed_while_looking_for_a_server_stays_the_draft(tmp_path, monkeypatch):
    """No server found: the sample session is opened, and the composer's text stays the draft the pane shows."""
    import tui.client.connect as client_connect
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    looking, give_up = asyncio.Event(), asyncio.Event()

    async def nothing_found():  # the scan goes on until the test has typed
        looking.set()
        await give_up.wait()
        return None
    monkeypatch.setattr(client_connect, "scan_local", nothing_found)
    made = Harness(tmp_path, base_url="", scan_local=True, source={})
    ctl = made.ctl
    ctl.adopt(conversation().__class__(), None)
    ctl.connect()
    await asyncio.wait_for(looking.wait(), 10)
    ctl.set_draft("typed while it looked")
    give_up.set()
    await made.idle()
    assert ctl.wb.session.messages, "the sample session was not opened"
    assert ctl.wb.draft == "typed while it looked"
    ctl.close()


async def test_a_template_that_refuses_is_said_once_not_on_every_keystroke(harness):
    """A template that rejects the conversation: typing ten characters gave ten error notifications (10 s each)."""
    from tui.context.templates.library import template_from_text
    from tui.controller.events import Notice
    ctl = await harness.ready()
    ctl.wb.set_template(template_from_text("{{ raise_exception('no, not this one') }}", "server:test", "t"))
    ctl.refresh()
    await harness.idle()
    for n in range(1, 11):
        ctl.set_draft("typing"[:n] if n <= 6 else "typing" + "!" * (n - 6))
        await harness.idle()
    await harness.idle()
    said = [e for e in harness.of(Notice) if "rejects the conversation" in e.text]
    assert len(said) == 1, len(said)


async def test_the_whole_app_at_20_by_5_with_keys_pressed(tmp_path, monkeypatch):
    from app_helpers import isolated, make_app, settle
    from tui.sessions.store import save_session
    isolated(monkeypatch, tmp_path)
    path = tmp_path / "s.ctxpane.json"
    save_session(conversation(), path)
    app = make_app(tmp_path, offline=True, file=path)
    async with app.run_test(size=(20, 5)) as pilot:
        await settle(pilot, app)
        await pilot.press(*"hi", "tab", "up", "down", "home", "end", "pageup", "pagedown", "enter", "p", "escape")
        await pilot.press("ctrl+t", "ctrl+t", "f5")
        await pilot.resize_terminal(1, 1)
        await pilot.pause()
        await pilot.resize_terminal(120, 30)
        await settle(pilot, app)
        assert app.query_one("ChatView").visible_lines()
