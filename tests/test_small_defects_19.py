"""The small defects of issue 19, each with a test that failed before."""

from __future__ import annotations

from controller_helpers import harness  # noqa: F401 - a fixture
from tui.controller.events import SessionChanged
from tui.sessions.model import Session


async def test_a_message_queued_while_connecting_names_the_session(harness):
    ctl = await harness.ready(Session())
    ctl.tuning.connecting = True  # a server is on its way: the message waits for it
    assert ctl.submit("What does the quota cover?")
    assert ctl.wb.session.title == "What does the quota cover?"
    assert harness.of(SessionChanged)[-1].title == "What does the quota cover?"


async def test_the_palettes_screenshot_is_saved_where_it_can_be_and_said_plainly(tmp_path, monkeypatch):
    """Before: Textual saved into ~/Downloads (absent here: an error) and its notice showed its markup raw."""
    from app_helpers import isolated, make_app, settle
    isolated(monkeypatch, tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home-without-downloads"))
    app = make_app(tmp_path)
    said = []
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        app.notify = lambda message, **kw: said.append(message)
        app.action_screenshot()
        await pilot.pause()
    shots = list((tmp_path / "xdg_data_home" / "ctxpane" / "screenshots").glob("*.svg"))
    assert len(shots) == 1 and shots[0].read_text().lstrip().startswith("<svg")
    assert said == [f"screenshot saved: {shots[0]}"] and "[" not in said[0]


async def test_the_palettes_own_screenshot_entry_saves_there_too(tmp_path, monkeypatch):
    """Before: the palette's entry (Textual's, which delivers to ~/Downloads) said "Failed to save screenshot"."""
    from app_helpers import isolated, make_app, settle
    from waiting import eventually
    isolated(monkeypatch, tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home-without-downloads"))
    app = make_app(tmp_path)
    said = []
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        app.notify = lambda message, **kw: said.append(message)
        entry = next(c for c in app.get_system_commands(app.screen) if c.title == "Screenshot")
        entry.callback()
        folder = tmp_path / "xdg_data_home" / "ctxpane" / "screenshots"
        await eventually(lambda: list(folder.glob("*.svg")), 10, "the screenshot", pilot=pilot)
    assert said == [f"screenshot saved: {next(folder.glob('*.svg'))}"]


def test_drop_oldest_never_starts_the_request_with_a_reply():
    """Before: a budget that kept the newest assistant turn but not its question sent the reply first."""
    from tui.context.policy.truncation import ORPHAN, PolicySettings, plan_truncation
    roles = ["system", "user", "assistant", "user", "assistant", "user"]
    costs = [5, 40, 12, 30, 10, 8]  # the newest question, its predecessor's reply, then nothing more fits
    plan = plan_truncation(roles, costs, 3, [False] * 6, [False] * 6,
                           PolicySettings("drop-oldest", context_window=60, max_tokens=10))
    first = next(i for i in plan.kept if roles[i] != "system")
    assert roles[first] == "user", (plan.kept, [e.reason for e in plan.ledger])
    assert 4 not in plan.kept and next(e for e in plan.ledger if e.message == 4).reason == ORPHAN


def test_the_markdown_export_says_a_reply_was_incomplete_and_that_branches_are_kept():
    from tui.context.messages import Message, Provenance
    from tui.sessions.model import Branch
    from tui.sessions.transfer import export_markdown
    session = Session(title="t", messages=[Message("user", "Hi", id="m0"), Message(
        "assistant", "Hel", provenance=Provenance("model", True), id="m1", incomplete=True)],
        branches=[Branch("m0", (Message("assistant", "Hello!", id="m2"),))])
    text = export_markdown(session)
    assert "## 1. assistant · incomplete (cut short)" in text and "- branches: 1 other" in text
    assert "Hello!" not in text  # the branch shown only


def test_an_over_long_title_is_clipped_and_said_not_a_refused_file(tmp_path):
    """Before: a 2,000-character title (the schema allowed 1,000) refused the whole file, and the app opened a
    sample in its place."""
    import json

    from tui.sessions.store import load_session
    path = tmp_path / "long-title.ctxpane.json"
    path.write_text(json.dumps({"format": "ctxpane-session", "version": 1, "title": "T" * 2000,
                                "messages": [{"role": "user", "content": "hello"}]}))
    opened = load_session(path)
    assert len(opened.session.title) == 1000 and opened.session.title.endswith("…")
    assert "2,000 characters" in opened.note and opened.session.messages[0].text() == "hello"
    assert "read_notes" not in opened.session.to_dict()


async def test_a_file_that_cannot_be_opened_is_never_swapped_for_the_sample(tmp_path):
    from controller_helpers import Harness
    from tui.controller.events import Notice, StatusChanged
    path = tmp_path / "broken.ctxpane.json"
    path.write_text("{not json")
    made = Harness(tmp_path)
    await made.ctl.open_first(path, offline=True)
    await made.idle()
    assert made.ctl.wb.session.messages == [] and made.ctl.wb.session.title == "New session"
    assert any("cannot open session" == n.title for n in made.of(Notice))
    assert "could not open broken.ctxpane.json" in made.of(StatusChanged)[-1].text
    made.ctl.close()


async def test_the_browsers_search_box_types_n_and_x_and_f2_renames_from_it(tmp_path, monkeypatch):
    """Before: n and x were the screen's keys, so typing them in the search box did nothing or acted."""
    from app_helpers import isolated, make_app, settle
    from tui.app.screens.sessions import BrowserScreen
    from tui.context.messages import Message
    from tui.sessions.store import save_session
    isolated(monkeypatch, tmp_path)
    folder = tmp_path / "sessions"
    save_session(Session(title="next xylophone", messages=[Message("user", "hi")]), folder / "nx.ctxpane.json")
    app = make_app(tmp_path, offline=True)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, app)
        app.action_open_session()
        await settle(pilot, app)
        browser = app.screen
        assert isinstance(browser, BrowserScreen)
        browser.query_one("#browser-search").focus()
        await pilot.press("n", "x")
        await settle(pilot, app)
        assert browser.query_one("#browser-search").value == "nx" and app.screen is browser
        await pilot.press("backspace", "backspace", "f2")
        await settle(pilot, app)
        assert app.screen is not browser  # the rename dialog, from the search box


def test_the_panes_own_notes_wrap_at_word_boundaries_and_the_document_does_not():
    """Before: 'of it / s tokens', 'tok / ens'. The document keeps its exact characters, wrapped at the width."""
    from tui.app.pane.document_layout import DocLayout, Note
    note = Note("── cached above: 14 tokens (predicted reuse 0) │ new below: 6 tokens — none: the whole "
                "previous request is reused ──", "cache")
    text = "abcdefghij" * 9
    layout = DocLayout()
    layout.update(text, [(len(text), note)], 40)
    rows = [layout.locate(row) for row in range(layout.height)]
    shown = [(line.note.text if line.note else text)[start:end] for line, start, end in rows]
    document_rows = [s for (line, _, _), s in zip(rows, shown) if line.note is None]
    note_rows = [s for (line, _, _), s in zip(rows, shown) if line.note is not None]
    assert document_rows == [text[i:i + 40] for i in range(0, len(text), 40)]  # cut mid-word: exact
    assert "".join(note_rows) == note.text and len(note_rows) > 1
    for row in note_rows[:-1]:
        assert row.endswith(" ") and len(row) <= 40, note_rows  # each row ends where a word does


def test_a_drop_note_takes_one_row_until_shown_whole():
    from tui.app.pane.document_layout import DocLayout, Note
    long_note = Note("✂ #3 (user, 120 tokens) dropped by drop-oldest: did not fit the budget of 400 tokens "
                     "(walking back from the newest) — 'Summarise the test schedule in three bullet points'", "dropped")
    notes = [(0, long_note)] * 8
    layout = DocLayout()
    layout.update("the document", notes, 40)
    assert layout.height == 8 + 1  # eight notes, one row each, and the document's line
    layout.fold_drops = False
    layout.lines.clear()
    layout.rows.clear()
    layout.update("the document", notes, 40)
    assert layout.height > 8 * 3  # whole, each note wraps at its words over several rows


def test_plain_glyphs_replace_the_marks_that_need_an_emoji_font(tmp_path):
    from tui.app.chat.layout import header_block
    from tui.app.config import resolve
    from tui.app.shown import use_glyphs
    from tui.context.messages import Message
    config = tmp_path / "config.toml"
    config.write_text('glyphs = "plain"\n')
    settings, _problems = resolve({}, {}, config)
    try:
        use_glyphs(settings.glyphs)
        text = header_block(Message("user", "hi", pinned=True, id="m0"), 0).text
        assert "📌" not in text and "* pinned" in text
    finally:
        use_glyphs("")
    assert "📌 pinned" in header_block(Message("user", "hi", pinned=True, id="m0"), 0).text
