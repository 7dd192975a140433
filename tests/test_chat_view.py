"""The chat transcript (ChatView): a cursor the keys move and act on, every message reachable, resize,
streaming growth, hostile text shown as text. Driven with Textual's pilot, asserted on the drawn rows."""

from __future__ import annotations

import re

import random

import pytest
from textual.app import App, ComposeResult

from app_helpers import isolated, make_app, settle
from tui.app.chat.panel import ChatPanel
from tui.app.chat.layout import ChatLayout, LiveReply
from tui.app.chat.transcript import ChatView
from tui.app.chat.wrap import Wrapped, wrap_text
from tui.app.chat.composer import Composer
from tui.app.screens.edit import EditScreen
from tui.app.messages import ChatUpdated
from tui.controller.events import ReplyGrew
from tui.context.messages import Message, Provenance
from tui.controller.snapshot import ChatState
from tui.sessions.model import Session
from tui.sessions.store import save_session
from waiting import eventually

SIZE = (150, 42)
CURSOR, BAR = "█", "▌"


@pytest.fixture()
def sessions(monkeypatch, tmp_path):
    return isolated(monkeypatch, tmp_path)


def numbered(count: int, words: int = 6) -> Session:
    """A chat of `count` messages, each saying its own number (`message 17 …`)."""
    session = Session(title=f"{count} messages", tokenizer="o200k_base")
    for i in range(count):
        role = "user" if i % 2 == 0 else "assistant"
        text = f"message {i} " + " ".join(["word"] * words)
        session.messages.append(Message(role, text, provenance=Provenance("user" if role == "user" else "model"),
                                        id=f"m{i}"))
    return session


def open_app(tmp_path, session: Session):
    path = tmp_path / "chat.ctxpane.json"
    save_session(session, path)
    return make_app(tmp_path, offline=True, file=path)


def selected_rows(chat: ChatView) -> list[str]:
    """The drawn rows on screen that carry the cursor bar."""
    return [line for line in chat.visible_lines() if line.startswith(CURSOR)]


async def focus_chat(pilot, app) -> ChatView:
    chat = app.query_one(ChatView)
    chat.focus()
    await pilot.pause()
    return chat


async def test_cursor_moves_with_keys_and_is_drawn(sessions, tmp_path):
    app = open_app(tmp_path, numbered(60))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        chat = app.query_one(ChatView)
        assert not selected_rows(chat)  # no cursor while the composer has focus
        chat = await focus_chat(pilot, app)
        assert chat.selected == 59  # the last message in view going in from below
        assert selected_rows(chat)[0].startswith(f"{CURSOR} assistant #59")
        await pilot.press("k", "k", "up")
        assert chat.selected == 56 and "message 56 word" in "".join(selected_rows(chat))
        await pilot.press("j", "down")
        assert chat.selected == 58
        await pilot.press("home")
        assert chat.selected == 0 and "message 0 word" in "".join(selected_rows(chat))
        assert chat.scroll_y == 0
        await pilot.press("pagedown")
        after_page = chat.selected
        assert after_page > 5 and chat.scroll_y > 0 and f"message {after_page} word" in "".join(selected_rows(chat))
        await pilot.press("pageup")
        assert chat.selected < after_page
        await pilot.press("end")
        assert chat.selected == 59 and chat.scroll_y == chat.max_scroll_y
        unselected = [line for line in chat.visible_lines() if line.startswith(BAR)]
        assert unselected and not any("message 59 word" in line for line in unselected)
        await pilot.press("i")
        assert isinstance(app.focused, Composer) and not selected_rows(chat)  # the cursor hides with focus
        chat = await focus_chat(pilot, app)
        await pilot.press("escape")
        assert isinstance(app.focused, Composer)


async def test_message_keys_act_on_the_selected_message_only_in_the_view(sessions, tmp_path):
    app = open_app(tmp_path, numbered(12))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press(*"pde")  # typed in the composer: text, not message actions
        await settle(pilot, app)
        assert app.query_one(Composer).text == "pde" and not isinstance(app.screen, EditScreen)
        assert not any(m.pinned for m in app.wb.session.messages) and len(app.wb.session.messages) == 12
        chat = await focus_chat(pilot, app)
        await pilot.press("home", "j", "j")  # message 2
        await pilot.press("p")
        await settle(pilot, app)
        assert app.wb.session.messages[2].pinned
        assert any("#2" in line and "📌 pinned" in line for line in selected_rows(chat))  # drawn again at once
        await pilot.press("e")
        assert isinstance(app.screen, EditScreen)
        app.screen.query_one("#editor").text = "an edited message two"
        await pilot.press("ctrl+s")
        await settle(pilot, app)
        assert app.wb.session.messages[2].text() == "an edited message two"
        assert "an edited message two" in chat.message_text(2) and chat.selected == 2
        # an earlier message edited: a new branch from #2 on; the nine after it are kept as the old branch
        assert len(app.wb.session.messages) == 3 and len(app.wb.session.branches[0].messages) == 10
        assert isinstance(app.focused, Composer)  # after a dialog, typing goes to the draft again
        chat = await focus_chat(pilot, app)
        assert any("an edited message two" in line for line in selected_rows(chat))
        await pilot.press("k", "d")
        await pilot.press("y")
        await settle(pilot, app)
        assert len(app.wb.session.messages) == 2 and "message 1 " not in chat.message_text(1)
        assert re.match(r"user #1  📌 pinned  ~\d+ tok · 1 other version kept[^\n]*\nan edited message two",
                        chat.message_text(1)) and chat.selected == 1


class PanelHarness(App):
    """The chat panel alone (no controller): the pane's counting of 10,000 messages is not what is tested."""

    def compose(self) -> ComposeResult:
        yield ChatPanel()


async def test_ten_thousand_messages_are_all_reachable():
    app = PanelHarness()
    async with app.run_test(size=SIZE) as pilot:
        app.query_one(ChatPanel).post_message(ChatUpdated(ChatState(0, tuple(numbered(10_000, words=2).messages))))
        await pilot.pause()
        chat = app.query_one(ChatView)
        assert len(chat.layout_model.entries) == 10_000  # no cap: every message is laid out
        assert any("message 9999 word" in line for line in chat.visible_lines())  # opens at the end
        chat = await focus_chat(pilot, app)
        await pilot.press("home")
        assert chat.selected == 0 and any("message 0 word" in line for line in chat.visible_lines())
        assert "message 0 word" in "".join(selected_rows(chat))
        await pilot.press("end")
        assert chat.selected == 9999 and any("message 9999 word" in line for line in selected_rows(chat))
        for _ in range(3):
            await pilot.press("pageup")
        assert 9900 < chat.selected < 9999 and f"message {chat.selected} word" in "".join(selected_rows(chat))
        chat.select(5000)
        await pilot.pause()
        assert any("message 5000 word" in line for line in selected_rows(chat))
        await pilot.press("escape")
        assert isinstance(app.focused, Composer)


async def test_resize_keeps_the_selection(sessions, tmp_path):
    session = numbered(80, words=30)  # long enough to wrap differently at each width
    app = open_app(tmp_path, session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        chat = await focus_chat(pilot, app)
        chat.select(40)
        await pilot.pause()
        rows_before = chat.layout_model.span(40)[1]
        for size in ((100, 30), (220, 50), SIZE):
            await pilot.resize_terminal(*size)
            await settle(pilot, app)
            assert chat.selected == 40
            assert "message 40 word" in "".join(selected_rows(chat)), size
        await pilot.resize_terminal(90, 42)
        await settle(pilot, app)
        assert chat.layout_model.span(40)[1] > rows_before  # narrower: wrapped again, still selected
        assert chat.selected == 40 and "message 40 word" in "".join(selected_rows(chat))


class Harness(App):
    def compose(self) -> ComposeResult:
        yield ChatView()


def fresh_rows(text: str, width: int) -> list[str]:
    return [text[a:b] for a, b in wrap_text(text, width)]


async def test_streaming_growth_is_drawn_and_rewraps_only_the_tail():
    rng = random.Random(5)
    words = ["context", "window", "a", "tokens", "ünïcödé", "界", "🙂", "\t", "supercalifragilistic" * 4]
    app = Harness()
    async with app.run_test(size=(70, 20)) as pilot:
        chat = app.query_one(ChatView)
        chat.show([Message("user", "tell me", id="u1")])
        chat.begin_reply()
        text = ""
        for step in range(400):
            text += " ".join(rng.choice(words) for _ in range(rng.randint(1, 6)))
            text += "\n" if step % 37 == 0 else " "
            before = chat.layout_model.entries[-1].height
            chat.stream_update(text)
            live = chat._live
            assert live.changed_from >= live._entry.head.height + before - 3  # the tail only (row, gap, ...)
        await pilot.pause()
        width = chat.text_width
        assert chat.message_lines(-1)[1:] == [line.replace("\t", "⇥") for line in fresh_rows(text, width)]
        tail = [line for line in fresh_rows(text.rstrip(), width)[-3:] if line.strip()]
        drawn = "\n".join(chat.visible_lines())
        assert all(line.replace("\t", "⇥").rstrip() in drawn for line in tail)  # the end of the reply is in view
        assert "● arriving" in chat.message_lines(-1)[0]
        chat.end_reply()
        chat.show([Message("user", "tell me", id="u1"), Message("assistant", text, id="a1")])
        await pilot.pause()
        assert chat.message_lines(1)[1:] == [line.replace("\t", "⇥") for line in fresh_rows(text, width)]


async def test_a_streamed_delta_extends_the_reply_and_a_missed_one_is_caught_up(monkeypatch):
    rng = random.Random(11)
    pieces = ["ab ", "c", "   ", "long" * 30, "\n", "界界", " ", "x\ty", "🙂 "]
    extended = []
    original = Wrapped.extend
    monkeypatch.setattr(Wrapped, "extend", lambda self, *a: extended.append(1) or original(self, *a))
    app = Harness()
    async with app.run_test(size=(60, 20)) as pilot:
        chat = app.query_one(ChatView)
        chat.show([Message("user", "go", id="u1")])
        chat.begin_reply()
        text = ""
        for step in range(300):
            told = len(text)
            text += rng.choice(pieces)
            if step % 97 == 50:
                continue  # this piece never reaches the view: the next event must bring it too
            chat.reply_grew(ReplyGrew(text, told))
        await pilot.pause()
        assert chat.message_lines(-1)[1:] == [line.replace("\t", "⇥") for line in fresh_rows(text, chat.text_width)]
        assert len(extended) > 250  # nearly every chunk took the delta path; the missed pieces and the first did not


def test_growing_wrap_matches_a_fresh_wrap_at_every_step():
    rng = random.Random(9)
    pieces = ["ab ", "c", "   ", "long" * 30, "\n", "界界", "\x1b[2J", "\u202e", " ", "x\ty"]
    live, layout = LiveReply(), ChatLayout()
    text = ""
    for _ in range(300):
        text += rng.choice(pieces)
        live.set(text, "", None, "")
        layout.update([], set(), {}, {}, 23, live)
        body = layout.entries[-1].body
        assert body.rows[0] == wrap_text(text, 23) if text else True


async def test_hostile_text_is_shown_as_text(sessions, tmp_path):
    hostile = ["\x1b[2J\x1b]52;c;SGVsbG8=\x07 wipe", "[/x] and [bold red]loud[/] and [@click=app.quit]q[/]",
               "\u202eevil\u202c right-to-left", "zero\u200bwidth and tab\there"]
    session = Session(title="hostile")
    for i, text in enumerate(hostile):
        session.messages.append(Message("user", text, id=f"u{i}"))
        session.messages.append(Message("tool", text, provenance=Provenance("tool", False, f"tool:{text}"),
                                        id=f"t{i}"))
    app = open_app(tmp_path, session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        chat = await focus_chat(pilot, app)
        await pilot.press("home")
        lines = "\n".join(chat.visible_lines())
        assert "\x1b" not in lines and "\x07" not in lines and "\u202e" not in lines and "\u200b" not in lines
        assert "␛[2J␛]52;c;SGVsbG8=␇ wipe" in lines
        assert "[/x] and [bold red]loud[/] and [@click=app.quit]q[/]" in lines  # markup shown, not obeyed
        assert "<U+202E>evil" in lines and "tab⇥here" in lines
        strips = [chat.render_line(y) for y in range(chat.size.height)]
        assert not any(segment.style and (segment.style.link or segment.style.meta)
                       for strip in strips for segment in strip)
        screen = app.export_screenshot()
        assert "\x1b[2J" not in screen and "\x1b]52" not in screen and app.is_running


async def test_same_text_in_two_roles_keeps_each_its_bar_and_an_edit_is_drawn():
    app = Harness()
    async with app.run_test(size=(60, 12)) as pilot:
        chat = app.query_one(ChatView)
        messages = [Message("user", "same words", id="a"), Message("assistant", "same words", id="b")]
        chat.show(messages)
        await pilot.pause()
        bars = [strip._segments[0].style.color for strip in (chat.render_line(1), chat.render_line(4))]
        assert [chat.render_line(y).text[2:12] for y in (1, 4)] == ["same words"] * 2
        assert bars[0] != bars[1]  # the wrapped rows are shared, the drawn rows are not
        messages[0].content = "changed in place"  # an edit mutates the message: its rows are drawn again
        chat.show(messages)
        await pilot.pause()
        assert chat.render_line(1).text[2:18] == "changed in place"


def big_messages(count: int, seed: int = 11, most: int = 300) -> list[Message]:
    """Messages of very different lengths and scripts: guessed heights are often off."""
    rng = random.Random(seed)
    words = ["context", "a", "window", "ünïcödé", "界界", "supercalifragilistic" * 3, "x\ty"]
    messages = []
    for i in range(count):
        text = f"message {i} " + " ".join(rng.choice(words) for _ in range(rng.randint(1, most)))
        if i % 7 == 0:
            text += "\n\n" + "\n".join("line" for _ in range(rng.randint(1, 30)))
        messages.append(Message("user" if i % 2 == 0 else "assistant", text, id=f"b{i}"))
    return messages


def test_a_lazy_layout_ends_exact_and_wraps_only_what_is_asked():
    messages = big_messages(400)
    layout = ChatLayout()
    layout.update(messages, set(), {}, {}, 50)
    assert layout.rewrapped == 0 and not any(entry.wrapped for entry in layout.entries)
    layout.wrap_near(200, 30, 60)
    near = [entry.index for entry in layout.entries if entry.wrapped]
    assert 200 in near and len(near) < 40 and layout.rewrapped == len(near)
    while layout.pending:
        layout.wrap_some(5_000)
    fresh = ChatLayout()
    fresh.update(messages, set(), {}, {}, 50)
    for entry in fresh.entries:
        _ = entry.head, entry.body  # wrapped one by one as they are read
    assert layout.first_row == fresh.first_row  # the guesses are all replaced by the real heights
    layout.update(messages[1:], set(), {}, {}, 50)  # a delete: the bodies stay, the headers (#index) are redone
    assert layout.rewrapped == 0 and all(entry._body is not None for entry in layout.entries)
    layout.wrap_near(100, 0, 20)
    assert layout.rewrapped == 0 and layout.entries[100].head.blocks[0].text.startswith("assistant #100")


async def test_scrolling_a_big_session_keeps_what_is_on_screen_in_place():
    """Scrolling up into messages not wrapped yet (wrapped as they come near, with heights other than the
    guesses) never moves the rows on screen; the off-screen rest is wrapped a slice at a time, and the
    screen shows exactly the rows of an exact layout."""
    messages = big_messages(800, most=60)
    app = Harness()
    async with app.run_test(size=(70, 24)) as pilot:
        chat = app.query_one(ChatView)
        chat.show(messages)
        await pilot.pause()
        assert chat.layout_model.pending > 0  # a big session: not all wrapped at once
        assert chat.scroll_y == chat.max_scroll_y  # opens at the end
        assert chat.message_lines(799)[-1].rstrip() in "\n".join(chat.visible_lines())
        chat.scroll_to(y=chat.layout_model.first_row[400], animate=False, immediate=True)
        await pilot.pause()
        for _ in range(40):
            before = chat.visible_lines()
            chat.scroll_to(y=chat.scroll_y - 3, animate=False, immediate=True)
            await pilot.pause()
            assert chat.visible_lines()[3:] == before[:-3]  # three rows down, the same rows
        await eventually(lambda: not chat.layout_model.pending, 30, "the rest to be wrapped", pilot=pilot)
        before = chat.visible_lines()
        assert not chat.layout_model.pending
        exact = ChatLayout()
        exact.update(messages, set(), {}, {}, chat.text_width)
        heights = [entry.head.height + entry.body.height + 1 for entry in exact.entries]
        assert chat.layout_model.first_row[-1] == sum(heights) == chat.virtual_size.height
        top = chat.layout_model.message_at(round(chat.scroll_y))
        assert chat.visible_lines() == before and top < 400
        chat.select(0)
        await pilot.pause()
        assert chat.scroll_y == 0 and "user #0" in chat.visible_lines()[0]


def test_several_notes_under_one_reply_are_each_a_line_of_their_own():
    """A refusal said by the server and by the receipt: two notes, two lines, no '↵' between them."""
    from tui.app.chat.layout import ChatLayout
    reply = Message("assistant", "", provenance=Provenance("model", True), id="a1")
    layout = ChatLayout()
    layout.update([Message("user", "go", id="u1"), reply], set(),
                  {"a1": "✗ the server said no\n⚠ the server dropped ~5 tokens\x1b[2J"}, {}, 80)
    notes = [b.text for b in layout.entries[1].body.blocks if b.style == "note"]
    assert notes == ["✗ the server said no", "⚠ the server dropped ~5 tokens\x1b[2J"], notes
    from tui.app.shown import drawn
    assert drawn(notes[1]).endswith("tokens␛[2J")  # blocks keep the text; rows are drawn with stand-ins
