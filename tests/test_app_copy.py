"""Copying a reply, its code blocks, the document and the request as curl: the clipboard request is observed."""

from __future__ import annotations

import stat

from app_helpers import isolated, make_app, settle
from test_chat_markdown import markdown_session
from tui.app.chat.transcript import ChatView
from tui.app.copying import clipboard_file
from waiting import eventually

REPLY = "Two ways:\n\n```python\nprint('one')\n```\n\nand\n\n```sh\necho two\n```\n"


async def wait_notice(pilot, app, words: str) -> str:
    found = await eventually(lambda: [n.message for n in app._notifications if words in n.message], 10,
                             lambda: f"a notice with {words!r}: {[n.message for n in app._notifications]}",
                             pilot=pilot)
    return found[-1]


def app_on_reply(tmp_path, monkeypatch, reply: str):
    """An offline app on a session whose message #1 is the assistant's `reply`."""
    isolated(monkeypatch, tmp_path)
    return make_app(tmp_path, offline=True, file=markdown_session(tmp_path, reply))


def select_reply(app) -> None:
    """The transcript focused, its cursor on the reply (#1): where `c` and `y` copy from."""
    view = app.query_one(ChatView)
    view.focus()
    view.select(1)


async def test_keys_on_the_transcript_copy_the_reply_and_each_code_block(tmp_path, monkeypatch):
    app = app_on_reply(tmp_path, monkeypatch, REPLY)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        select_reply(app)
        await pilot.press("c")
        assert app.clipboard == REPLY  # the Markdown source, not the drawn rows
        notice = await wait_notice(pilot, app, "Copied assistant message #1")
        assert str(clipboard_file()) in notice and clipboard_file().read_text() == REPLY
        assert stat.S_IMODE(clipboard_file().stat().st_mode) == 0o600
        await pilot.press("y")
        assert app.clipboard == "print('one')\n"
        await wait_notice(pilot, app, "code block 1 of 2 (python)")
        await pilot.press("y")
        assert app.clipboard == "echo two\n"
        await pilot.press("y")
        assert app.clipboard == "print('one')\n"  # round again


async def test_typing_c_or_y_in_the_composer_copies_nothing(tmp_path, monkeypatch):
    isolated(monkeypatch, tmp_path)
    app = make_app(tmp_path, offline=True, file=markdown_session(tmp_path, REPLY))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("c", "y")
        assert app.clipboard == ""


async def test_palette_copies_the_document_and_curl_without_the_key(tmp_path, monkeypatch):
    isolated(monkeypatch, tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-very-secret")
    app = make_app(tmp_path, offline=True, file=markdown_session(tmp_path, REPLY))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await app.run_action("copy_document")
        assert app.clipboard == app.wb.view.document.text and "<|im_start|>" in app.clipboard
        await app.run_action("copy_curl")
        assert app.clipboard.startswith("curl ") and '"Authorization: Bearer $OPENAI_API_KEY"' in app.clipboard
        assert "sk-very-secret" not in app.clipboard
        await wait_notice(pilot, app, "the request as curl")
        assert "sk-very-secret" not in clipboard_file().read_text()
        titles = [command.title for command in app.get_system_commands(app.screen)]
        assert {"Copy reply", "Copy code block", "Copy document", "Copy request as curl"} <= set(titles)
