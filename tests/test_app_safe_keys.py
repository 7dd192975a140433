"""Keys that cannot destroy by accident: message keys act only in the transcript, focus goes back to the
composer after a message dialog, re-send asks first, Ctrl+Z and the palette undo. Pilot tests."""

from __future__ import annotations

import pytest

from app_helpers import isolated, make_app, settle
from tui.app.chat.transcript import ChatView
from tui.app.chat.composer import Composer
from tui.app.screens.confirm import ConfirmScreen
from tui.context.messages import Message, Provenance
from tui.sessions.model import Session
from tui.sessions.store import load_session, save_session

SIZE = (150, 42)
SENTENCE = "please edit the draft, do not drop or resend"  # e, d, p, r and more


@pytest.fixture()
def sessions(monkeypatch, tmp_path):
    return isolated(monkeypatch, tmp_path)


def chat(count: int = 8) -> Session:
    session = Session(title="chat", tokenizer="o200k_base")
    for i in range(count):
        role = "user" if i % 2 == 0 else "assistant"
        session.messages.append(Message(role, f"message {i}", provenance=Provenance("user" if i % 2 == 0 else "model"),
                                        id=f"m{i}"))
    return session


def open_app(tmp_path, session: Session, **options):
    path = tmp_path / "chat.ctxpane.json"
    save_session(session, path)
    return make_app(tmp_path, offline=True, file=path, **options), path


def texts(app) -> list[str]:
    return [m.text() for m in app.wb.session.messages]


async def select(pilot, app, index: int) -> ChatView:
    view = app.query_one(ChatView)
    view.focus()
    await pilot.pause()
    view.select(index)
    await pilot.pause()
    return view


async def type_sentence_into_the_draft_only(pilot, app, before: list) -> None:
    """Type a sentence: every key goes to the draft; no message changes and no dialog opens."""
    await pilot.press(*SENTENCE)
    await settle(pilot, app)
    assert len(app.screen_stack) == 1 and app.wb.session.messages == before
    assert app.query_one(Composer).text == SENTENCE


@pytest.mark.parametrize("dialog_key, answer", [("d", "n"), ("d", "escape"), ("e", "escape")])
async def test_typing_after_a_message_dialog_goes_to_the_draft(sessions, tmp_path, dialog_key, answer):
    app, _path = open_app(tmp_path, chat())
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        before = list(app.wb.session.messages)
        await select(pilot, app, 3)
        await pilot.press(dialog_key)
        await pilot.pause()
        assert app.screen is not app.screen_stack[0]  # the dialog is open
        await pilot.press(answer)
        await pilot.pause()
        assert isinstance(app.focused, Composer)  # back where typing is text
        await type_sentence_into_the_draft_only(pilot, app, before)


async def test_typing_in_the_composer_with_a_message_last_selected_changes_only_the_draft(sessions, tmp_path):
    app, _path = open_app(tmp_path, chat())
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        before = list(app.wb.session.messages)
        await select(pilot, app, 2)
        await pilot.press("i")
        await type_sentence_into_the_draft_only(pilot, app, before)


async def test_ctrl_z_and_the_palette_undo_a_delete_and_the_file_follows(sessions, tmp_path):
    app, path = open_app(tmp_path, chat())
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        before = texts(app)
        await select(pilot, app, 3)
        await pilot.press("d", "y")
        await settle(pilot, app)
        assert "message 3" not in texts(app)
        await select(pilot, app, 1)
        await pilot.press("d", "y")
        await settle(pilot, app)
        commands = [c.title for c in app.get_system_commands(app.screen)]
        assert "Undo delete #1" in commands
        app.query_one(ChatView).focus()
        await pilot.press("ctrl+z")
        await settle(pilot, app)
        assert "message 1" in texts(app) and "message 3" not in texts(app)
        assert "Undo delete #3" in [c.title for c in app.get_system_commands(app.screen)]
        app.action_undo()  # what the palette entry runs
        await settle(pilot, app)
        assert texts(app) == before
        app.autosave(now=True)
        await settle(pilot, app)
        assert [m.text() for m in load_session(path).session.messages] == before


async def test_ctrl_z_in_the_composer_undoes_typing_not_messages(sessions, tmp_path):
    app, _path = open_app(tmp_path, chat())
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await select(pilot, app, 3)
        await pilot.press("d", "y")
        await settle(pilot, app)
        app.query_one(Composer).focus()
        await pilot.press(*"hello", "ctrl+z")
        await settle(pilot, app)
        assert "message 3" not in texts(app)


async def test_message_keys_say_what_they_do_in_the_footer(sessions, tmp_path):
    app, _path = open_app(tmp_path, chat())
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await select(pilot, app, 3)
        shown = {b.binding.description for b in app.active_bindings.values() if b.binding.show}
        assert {"Edit", "Delete", "Pin/unpin", "Re-send from here", "Undo", "Back to composer"} <= shown


async def test_resend_asks_first_saying_how_many_messages_it_drops(sessions, tmp_path):
    app, _path = open_app(tmp_path, chat())
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        before = list(app.wb.session.messages)
        await select(pilot, app, 3)  # an assistant reply: re-sent from the user message before it
        await pilot.press("r")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        assert "user #2" in app.screen.question and "5 later messages" in app.screen.question
        await pilot.press("n")
        await settle(pilot, app)
        assert app.wb.session.messages == before and isinstance(app.focused, Composer)


def luminance(color) -> float:
    def channel(value: int) -> float:
        c = value / 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = color.get_truecolor()
    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)


def contrast(a, b) -> float:
    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


@pytest.mark.parametrize("theme", ["ctxpane-dark", "ctxpane-light", "high-contrast", "solarized-dark"])
async def test_the_cursor_is_visible_in_every_shipped_theme(sessions, tmp_path, theme):
    app, _path = open_app(tmp_path, chat(), flags={"theme": theme})
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        assert app.theme == theme
        view = await select(pilot, app, 3)
        rows = [view.render_line(y) for y in range(view.size.height)]
        cursor_rows = [strip for strip in rows if strip.text.startswith("█")]
        other_rows = [strip for strip in rows if strip.text.startswith("▌")]
        assert cursor_rows and other_rows
        bar = list(cursor_rows[0])[0].style
        tint = bar.bgcolor
        plain = list(other_rows[0])[0].style.bgcolor
        assert contrast(bar.color, tint) >= 3, theme  # the bar stands out from the row it marks
        assert contrast(bar.color, plain) >= 3, theme  # and from the transcript's background
        assert tint != plain  # the selected message is tinted as a whole


class QuitApp:
    """What launch._run reads of the app once it has exited (its closing line is the controller's)."""

    def __init__(self, line: str, replay_only: bool = False) -> None:
        self.line, self.replay_only, self.save_failure, self.return_code = line, replay_only, None, 0

    def run(self) -> None:
        pass

    def closing_line(self) -> str:
        return self.line


def test_quitting_prints_where_the_session_was_saved(tmp_path, capsys):
    from tui.app.launch import _run
    path = tmp_path / "evil\x1b]0;title\x07.ctxpane.json"
    assert _run(QuitApp(f"session saved in {path}")) == 0
    out = capsys.readouterr().out
    assert out.startswith("ctxpane: session saved in ") and "\x1b" not in out and "␛" in out
    assert _run(QuitApp(f"session saved in {path}", replay_only=True)) == 0 and capsys.readouterr().out == ""
    assert _run(QuitApp("")) == 0 and capsys.readouterr().out == ""  # nothing typed: no file


async def test_one_numbering_scheme_in_the_chat_the_document_and_the_ledger(sessions, tmp_path):
    from app_helpers import document_rows, plain
    from tui.app.pane.ledger_tab import LedgerView
    session = chat(12)
    session.policy.update(name="drop-oldest", context_window=60, max_tokens=10)
    app, _path = open_app(tmp_path, session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        assert app.wb.view.ledger
        first = app.wb.view.ledger[0]
        notes = [row for row in document_rows(app) if row.startswith("✂")]
        assert notes and notes[0].startswith(f"✂ {first.role} #{first.message} dropped")
        assert app.query_one(ChatView).message_text(first.message).startswith(f"{first.role} #{first.message}")
        from textual.widgets import TabbedContent
        app.query_one("#tabs", TabbedContent).active = "ledger"
        await settle(pilot, app)
        ledger = app.query_one(LedgerView)
        table = plain(ledger.query_one("#ledger-table").content)
        assert f"#{first.message}" in table
        ledger.query_one("#ledger-search").value = f"message {first.message}"
        await settle(pilot, app)
        assert plain(ledger.query_one("#ledger-hits")).startswith(f"#{first.message}: DROPPED")
        assert "message 0" not in "".join(notes)


async def test_a_resize_keeps_the_scroll_position_while_the_composer_has_focus(sessions, tmp_path):
    session = Session(title="long", tokenizer="o200k_base")
    for i in range(80):
        session.messages.append(Message("user" if i % 2 == 0 else "assistant", f"message {i} " + "word " * 30,
                                        provenance=Provenance("user" if i % 2 == 0 else "model"), id=f"m{i}"))
    app, _path = open_app(tmp_path, session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        view = app.query_one(ChatView)
        assert isinstance(app.focused, Composer)
        view.scroll_to(y=view.layout_model.first_row[30], animate=False, immediate=True)
        await pilot.pause()
        for size in ((100, 30), (220, 50), (90, 42), SIZE):
            await pilot.resize_terminal(*size)
            await settle(pilot, app)
            assert "user #30" in view.visible_lines()[0], size  # the same message at the top


async def test_ctrl_e_edits_the_system_prompt_from_the_composer_but_not_inside_a_dialog(sessions, tmp_path):
    from tui.app.screens.edit import EditScreen
    app, _path = open_app(tmp_path, chat())
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        assert isinstance(app.focused, Composer)
        await pilot.press("ctrl+e")
        await pilot.pause()
        assert isinstance(app.screen, EditScreen)
        await pilot.press("ctrl+e")  # in the dialog's editor: end of line, not a second dialog
        await pilot.pause()
        assert len(app.screen_stack) == 2
