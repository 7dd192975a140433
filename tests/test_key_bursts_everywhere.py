"""No key is ever lost (issue 19): bursts of keys at full speed arrive whole in every input.

A burst is handed to the app's driver all at once, as the driver hands on one read from the terminal (a fast
typist's keys, tmux's send-keys): nothing is handled before the last key is queued. (`pilot.press` waits for the
app to be idle after each key, which hides every race between a key and the ones behind it.) Each burst mixes
printable keys, with the letters the transcript and the dialogs bind, and Backspace, Delete, Left, Right, Home and
End; the text it should leave is computed by `LineEditor` (key_bursts.py), a reference editor, and compared with
the widget's text and cursor.
"""

from __future__ import annotations

import asyncio
import random
import string
import threading
import time

import pytest
from textual import events
from textual.widgets import Input, TextArea

from app_helpers import isolated, make_app, settle
from fault_server import Handler, QuietServer, chunk
from key_bursts import LineEditor, post, random_burst
from tui.app.chat.search import ChatSearch
from tui.app.chat.transcript import ChatView
from tui.app.chat.composer import Composer
from tui.app.screens.edit import EditScreen
from tui.app.screens.settings import SettingsScreen
from waiting import eventually

SIZE = (160, 48)
RUNS = 20


async def burst(pilot, app, keys: list[str]) -> None:
    post(app, keys)
    for _ in range(3):  # the driver's keys reach the App's queue a loop turn later
        await asyncio.sleep(0)
    await drained(pilot)


KEYS_HANDLED = [0]  # key events handled by any widget, screen or the App (`running`'s message hook)


def running(app):
    def count(message) -> None:
        if isinstance(message, events.Key):
            KEYS_HANDLED[0] += 1
    return app.run_test(size=SIZE, message_hook=count)


async def drained(pilot) -> None:
    """Every key has been handled, and every key it passed on: rounds until two in a row handled no key.

    A round waits until every message queued so far, on the App and every widget of every screen, is handled
    (a key passed on, App to editor to a dialog to its editor, takes a round a hop). Not `pilot.pause()`: it
    waits for an idle CPU, which never comes while a reply streams."""
    app, quiet = pilot.app, 0
    while quiet < 2:
        before = KEYS_HANDLED[0]
        nodes = [app, *(node for screen in app.screen_stack for node in screen.walk_children(with_self=True))]
        handled = [asyncio.Event() for _ in nodes]
        await asyncio.wait_for(asyncio.gather(*(done.wait() for node, done in zip(nodes, handled)
                                                if node.call_later(done.set))), 10)
        quiet = quiet + 1 if KEYS_HANDLED[0] == before else 0


def shown(widget) -> tuple[str, int]:
    """A one-line editor's text and cursor column."""
    if isinstance(widget, TextArea):
        row, column = widget.cursor_location
        assert row == 0, f"the text has more than one line: {widget.text!r}"
        return widget.text, column
    return widget.value, widget.cursor_position


def replace_text(widget, text: str) -> str:
    """A fresh short text for the next run (a long one would wrap, and Home and End act on a wrapped row)."""
    if isinstance(widget, TextArea):
        widget.text = text
    else:
        widget.value = text
    return text


def check(widget, start: str, keys: list[str], where: str) -> None:
    expected = LineEditor(start, smart_home=isinstance(widget, TextArea)).after(keys)
    assert shown(widget) == (expected.text, expected.cursor), f"{where}: keys {keys} on {start!r}"


@pytest.fixture()
def app(monkeypatch, tmp_path):
    isolated(monkeypatch, tmp_path)
    return make_app(tmp_path, offline=True)


# -- inputs already open ------------------------------------------------------------------------------------
async def test_bursts_arrive_whole_in_the_composer(app):
    async with running(app) as pilot:
        await settle(pilot, app)
        composer = app.query_one(Composer)
        for run in range(RUNS):
            start = replace_text(composer, f"draft {run}")
            keys = random_burst(random.Random(run))
            await burst(pilot, app, keys)
            check(composer, start, keys, f"composer, run {run}")


async def test_bursts_arrive_whole_in_every_settings_field(app):
    """One burst a run fills the whole form, Tab from field to field (twice over the policy list): each field
    holds its own keys, none of the keys behind a Tab in the field it left."""
    async with running(app) as pilot:
        await settle(pilot, app)
        await pilot.press("f8")
        await settle(pilot, app)
        assert isinstance(app.screen, SettingsScreen)
        fields = list(app.screen.query(Input))
        assert len(fields) >= 10
        for run in range(RUNS):
            for field in fields:
                replace_text(field, "")
            fields[0].focus()
            await drained(pilot)
            typed = {field.id: random_burst(random.Random(f"{run}-{field.id}"), 10) for field in fields}
            keys = [key for field in fields for key in [*typed[field.id], *tabs_to_next(app.screen, field)]]
            await burst(pilot, app, keys[:-1] if keys[-1] == "tab" else keys)
            for field in fields:
                check(field, "", typed[field.id], f"settings {field.id}, run {run}")


def tabs_to_next(screen, field) -> list[str]:
    """The Tabs from `field` to the next Input in the focus chain (none after the last)."""
    chain = screen.focus_chain
    later = [widget for widget in chain[chain.index(field) + 1:] if isinstance(widget, Input)]
    return ["tab"] * (chain.index(later[0]) - chain.index(field)) if later else []


async def test_bursts_arrive_whole_in_the_rename_system_prompt_and_edit_dialogs(app):
    async with running(app) as pilot:
        await settle(pilot, app)
        openers = {"rename": app.dialogs.rename_session, "system prompt": app.dialogs.edit_system,
                   "edit message": app.dialogs.edit_message, "attach": app.dialogs.attach}
        for name, opener in openers.items():
            await focus_first_user(pilot, app)  # what the edit acts on
            opener()
            await settle(pilot, app)
            assert isinstance(app.screen, EditScreen), name
            for editor in app.screen.query("#label, #editor"):
                editor.focus()
                await drained(pilot)
                base = shown(editor)[0]
                for run in range(RUNS):
                    start = replace_text(editor, f"{base[:40]} {run}")
                    keys = random_burst(random.Random(f"{name}-{editor.id}-{run}"))
                    await burst(pilot, app, keys)
                    check(editor, start, keys, f"{name} {editor.id}, run {run}")
            await pilot.press("escape")
            await settle(pilot, app)


async def test_bursts_arrive_whole_in_the_transcript_search(app):
    async with running(app) as pilot:
        await settle(pilot, app)
        app.action_search_chat()
        await settle(pilot, app)
        search = app.query_one(ChatSearch)
        assert search.has_focus
        for run in range(RUNS):
            start = replace_text(search, f"query {run}")
            keys = random_burst(random.Random(f"search-{run}"))
            await burst(pilot, app, keys)
            check(search, start, keys, f"search, run {run}")


async def test_bursts_arrive_whole_in_the_session_browser_search(app):
    async with running(app) as pilot:
        await settle(pilot, app)
        app.action_open_session()
        await settle(pilot, app)
        search = app.screen.query_one("#browser-search", Input)
        search.focus()
        await drained(pilot)
        for run in range(RUNS):
            start = replace_text(search, f"title {run}")
            keys = random_burst(random.Random(f"browser-{run}"))
            await burst(pilot, app, keys)
            check(search, start, keys, f"browser search, run {run}")


# -- keys typed in the same burst as the key that opens the input ---------------------------------------------
async def test_keys_typed_with_the_key_that_opens_a_dialog_land_in_its_editor(app):
    """F8, Ctrl+E and Ctrl+O open a dialog from the composer, and so does the palette's Rename; the keys behind
    them in the same burst are typed into its editor. Each run's burst starts with the Esc that closes the last
    run's dialog: the keys go back to the composer, to the key that opens the next one, and on into it."""
    async with running(app) as pilot:
        await settle(pilot, app)
        cases = [("f8", "#field-context_window", app.controller.tuning.values()["context_window"]),
                 ("ctrl+e", "#editor", app.controller.system_prompt()), ("ctrl+o", "#editor", ""),
                 (app.dialogs.rename_session, "#editor", app.wb.session.title)]
        for run in range(RUNS):
            opener, selector, start = cases[run % len(cases)]
            keys = random_burst(random.Random(f"opens-{run}"), 16)
            if callable(opener):  # no key of its own (the palette's entry): the keys are queued as it opens
                await close(pilot, app)
                opener()
                await burst(pilot, app, keys)
            else:
                await burst(pilot, app, [*(["escape"] if run else []), opener, *keys])
            assert len(app.screen_stack) == 2, f"{opener}, run {run}: {app.screen_stack}"
            check(app.screen.query_one(selector), start, keys, f"{opener} then keys, run {run}")
        await close(pilot, app)


async def test_keys_typed_with_the_key_that_opens_a_picker_pick_in_it(app):
    """F3, Down… and Enter at once pick from the template list (the Downs and the Enter went to the composer)."""
    async with running(app) as pilot:
        await settle(pilot, app)
        choices = [value for value, _label in app.controller.template_choices()][:5]
        for run in range(RUNS):
            downs = random.Random(f"picker-{run}").randrange(len(choices))
            await burst(pilot, app, ["f3", *["down"] * downs, "enter"])
            assert len(app.screen_stack) == 1, f"run {run}: the picker is still open"
            assert app.wb.template.name == choices[downs], f"run {run}: {downs} Down"


async def test_keys_typed_before_shift_tab_stay_in_the_composer(app):
    """Shift+Tab moves the focus as it arrives (an App priority binding), while the keys typed before it are still
    queued in the composer: they are the composer's, not the transcript's (there d opened a delete dialog)."""
    async with running(app) as pilot:
        await settle(pilot, app)
        composer = app.query_one(Composer)
        for run in range(RUNS):
            composer.focus()
            start = replace_text(composer, f"draft {run}")
            keys = random_burst(random.Random(f"before-shift-tab-{run}"), 16)
            await burst(pilot, app, [*keys, "shift+tab"])
            assert len(app.screen_stack) == 1, f"run {run}: a dialog opened: {app.screen}"
            assert app.focused is not composer, f"run {run}: Shift+Tab did not move the focus"
            check(composer, start, keys, f"keys before Shift+Tab, run {run}")


async def test_keys_typed_behind_tab_leave_the_composer(app):
    """Tab with nothing to complete moves the focus on from the composer: the keys behind it go with it."""
    async with running(app) as pilot:
        await settle(pilot, app)
        composer = app.query_one(Composer)
        for run in range(RUNS):
            composer.focus()
            start = replace_text(composer, f"draft {run}")
            keys = random_burst(random.Random(f"behind-tab-{run}"), 12, string.ascii_lowercase)
            await burst(pilot, app, [*keys, "tab", *"xyz"])
            assert app.focused is not composer, f"run {run}: Tab did not move the focus"
            check(composer, start, keys, f"keys before and behind Tab, run {run}")


async def test_keys_typed_with_the_transcript_key_that_opens_an_input_land_in_it(app):
    """e (edit) and / (search) in the transcript: the keys behind them are text in the input they open, not the
    transcript's keys (n, e, d…)."""
    async with running(app) as pilot:
        await settle(pilot, app)
        first_user = next(m for m in app.wb.session.messages if m.role == "user").text()
        cases = [("e", "#editor", first_user), ("slash", "ChatSearch", "")]
        for run in range(RUNS):
            opener, selector, start = cases[run % len(cases)]
            await focus_first_user(pilot, app)
            keys = random_burst(random.Random(f"transcript-{run}"), 16)
            await burst(pilot, app, [opener, *keys])
            assert app.screen.query(selector), f"{opener}, run {run}: nothing opened"
            check(app.screen.query_one(selector), start, keys, f"{opener} then keys, run {run}")
            await close(pilot, app)


async def test_keys_typed_after_a_message_dialog_closes_go_to_the_composer(app):
    """Saving a message's edit hands the typing back to the composer: the letters behind Ctrl+S are text there,
    not the transcript's keys (e edits, d deletes, n, y…)."""
    async with running(app) as pilot:
        await settle(pilot, app)
        composer = app.query_one(Composer)
        for run in range(RUNS):
            await focus_first_user(pilot, app)
            await burst(pilot, app, ["e"])
            assert isinstance(app.screen, EditScreen)
            composer.text = ""
            closer = "ctrl+s" if run % 2 else "escape"  # saved or cancelled: either way back to the composer
            keys = random_burst(random.Random(f"after-save-{run}"), 16)
            await burst(pilot, app, [closer, *keys])
            assert len(app.screen_stack) == 1, f"run {run}: a dialog opened: {app.screen}"
            check(composer, "", keys, f"after {closer}, run {run}")


async def focus_first_user(pilot, app) -> None:
    view = app.query_one(ChatView)
    view.focus()
    await drained(pilot)
    view.select(next(i for i, m in enumerate(app.wb.session.messages) if m.role == "user"))
    await drained(pilot)


async def close(pilot, app) -> None:
    """Esc until only the main screen is left and the search is closed."""
    for _ in range(3):
        if len(app.screen_stack) == 1 and not app.query(ChatSearch):
            break
        await burst(pilot, app, ["escape"])
    assert len(app.screen_stack) == 1 and not app.query(ChatSearch)


# -- while a reply streams ------------------------------------------------------------------------------------
class DripHandler(Handler):
    """/drip: a reply of many small chunks, one every 20 ms, for as long as the test types (Esc ends it)."""

    def s_drip(self) -> None:
        self._start_chunked()
        for number in range(3000):
            self._events([chunk(f"word{number} ")])
            time.sleep(0.02)  # a model's pace: the reply must go on streaming while the bursts are typed
        self._send("data: [DONE]\n\n")
        self._finish()


@pytest.fixture()
def drip_server():
    server = QuietServer(("127.0.0.1", 0), DripHandler)
    server.daemon_threads, server.requests, server.counters = True, [], {}
    server.delay, server.redirect_to = 0.0, ""
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


async def test_bursts_arrive_whole_in_the_composer_while_a_reply_streams(monkeypatch, tmp_path, drip_server):
    isolated(monkeypatch, tmp_path)
    app = make_app(tmp_path, flags={"base_url": drip_server + "/drip"})
    async with running(app) as pilot:
        await settle(pilot, app)
        await pilot.press(*"go", "enter")
        await eventually(lambda: app.controller.streaming, 10, "the reply to start", pilot=pilot)
        composer = app.query_one(Composer)
        for run in range(RUNS):
            start = replace_text(composer, f"next {run}")
            keys = random_burst(random.Random(f"streaming-{run}"))
            await burst(pilot, app, keys)
            check(composer, start, keys, f"composer while streaming, run {run}")
        assert app.controller.streaming, "the reply ended before the bursts did: make it longer"
        await pilot.press("escape")
        await settle(pilot, app)
