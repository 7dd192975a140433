"""The controller's transitions, on a plain asyncio loop: no Textual anywhere.

Each transition changes the state, bumps the generation and tells the listener; a computation that
started before a change never overwrites the newer view; edits and pins make new snapshots (the old
ones are untouched). Sending is in tests/test_controller_sending.py.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading

import pytest

from controller_helpers import harness  # noqa: F401 - a fixture
from tui.context.templates.library import ChatTemplate, builtin_template
from tui.controller.events import ChatChanged, Notice, PaneChanged, SessionChanged
from tui.context.messages import Message
from tui.sessions.model import Session
from tui.sessions.store import load_session, save_session


def test_the_controller_imports_no_textual():
    code = ("import sys, tui.controller, tui.controller.controller, tui.controller.sending;"
            "print(','.join(m for m in sys.modules if m.split('.')[0] in ('textual', 'tui') and "
            "(m.startswith('textual') or m.startswith('tui.app'))))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == ""


async def test_no_transition_holds_the_controller(harness):
    """Each takes the Parts and, where it needs another transition, the functions it may call, named in a hooks
    record: what it can change is read off its constructor."""
    ctl = await harness.ready()
    transitions = {name: value for name, value in vars(ctl).items()
                   if type(value).__module__.startswith("tui.controller.") and name != "parts"}
    assert {"editing", "history", "tokenizing", "recall", "capabilities", "sending", "opening", "tuning", "slash",
            "switches", "showing", "updates"} <= set(transitions)
    holding = {name for name, value in transitions.items() if any(v is ctl for v in vars(value).values())}
    assert holding == set()
    assert all(vars(value)["parts"] is ctl.parts for value in transitions.values() if "parts" in vars(value))
    assert ctl.sending.cache.parts is ctl.parts and ctl.parts.wb is ctl.wb and ctl.parts.file is ctl.file


def test_no_module_of_the_controller_imports_the_controller():
    """The controller imports its transitions, never the other way: no module reaches back for the whole."""
    import ast
    from pathlib import Path

    import tui.controller
    folder = Path(tui.controller.__file__).parent
    importing = set()
    for path in folder.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (
                    node.module == "tui.controller.controller"
                    or (node.module == "tui.controller" and any(a.name == "Controller" for a in node.names))):
                importing.add(path.name)
    assert importing == set()  # no transition does
    assert "Controller" in tui.controller.__all__  # the package's face names it (loaded on first use)
    assert tui.controller.Controller.__module__ == "tui.controller.controller"


# -- the draft and the computation ---------------------------------------------------------------------

async def test_the_draft_reaches_the_pane_and_a_later_computation(harness):
    ctl = await harness.ready()
    before = ctl.generation
    ctl.set_draft("And the price in euros?")
    assert ctl.generation == before + 1
    ctl.set_draft("And the price in euros?")  # the same text again is no change
    assert ctl.generation == before + 1
    await harness.idle()  # a spliced draft is computed in full after a pause
    pane = harness.of(PaneChanged)[-1].pane
    assert "And the price in euros?" in pane.view.document.text
    assert pane.draft_index == len(ctl.wb.session.messages) and ctl.snapshot().draft == "And the price in euros?"


async def test_every_transition_bumps_the_generation_and_shows_the_chat(harness, tmp_path):
    ctl = await harness.ready()
    steps = {
        "edit": lambda: ctl.edit(3, "And the price now?"),  # the last message: in place (an earlier one branches)
        "pin": lambda: ctl.toggle_pin(1),
        "delete": lambda: ctl.delete(3),
        "system prompt": lambda: ctl.set_system_prompt("You are kind."),
        "attach": lambda: ctl.attach("Quota: 250 GB.", "file:notes.txt"),
        "template": lambda: ctl.set_template("llama3"),
        "policy": lambda: ctl.set_policy("drop-oldest"),
        "fences": lambda: ctl.toggle_fences(),
        "draft": lambda: ctl.set_draft("typing"),
        "refresh": lambda: ctl.refresh(),
        "tokenizer": lambda: ctl.use_tokenizer(ctl.wb.tokenizer, None),
        "new session": lambda: ctl.new_session(),
    }
    for name, step in steps.items():
        generation, shown = ctl.generation, len(harness.of(ChatChanged)) + len(harness.of(PaneChanged))
        step()
        assert ctl.generation > generation, name
        await harness.idle()
        assert len(harness.of(ChatChanged)) + len(harness.of(PaneChanged)) > shown, name
    assert ctl.wb.session.messages == [] and harness.of(SessionChanged)[-1].title == "New session"
    saved = load_session(next((tmp_path / "sessions").glob("*.ctxpane.json"))).session  # the old one was kept
    assert saved.messages[0].text() == "You are kind." and saved.messages[-1].provenance.label == "file:notes.txt"
    assert saved.template["name"] == "llama3" and saved.policy["name"] == "drop-oldest" and saved.fences is False


async def test_a_stale_result_never_overwrites_a_newer_view(harness):
    ctl = await harness.ready()
    old_view, old_generation = ctl.wb.compute(), ctl.generation
    ctl.edit(1, "A newer question")
    assert not ctl.apply_view(old_view, old_generation)
    assert ctl.wb.view is not old_view
    await harness.idle()
    assert "A newer question" in ctl.wb.view.document.text


async def test_a_computation_running_during_an_edit_is_dropped_and_the_edit_computed(harness):
    ctl = await harness.ready()
    release, started = threading.Event(), threading.Event()
    compute = ctl.wb.compute

    def slow_compute(*args, **kwargs):  # reads the state at once, answers late
        view = compute(*args, **kwargs)
        started.set()
        release.wait(10)
        return view
    ctl.wb.compute = slow_compute
    ctl.refresh()
    await asyncio.to_thread(started.wait, 10)  # the computation has read the conversation before the edit
    seen = len(harness.of(PaneChanged))
    ctl.edit(1, "Edited while computing")
    for i in range(5):  # a burst of changes while the worker is busy: only the newest is computed
        ctl.set_draft("x" * (i + 1))
    release.set()
    await harness.idle()
    later = [event.pane for event in harness.of(PaneChanged)[seen:]]
    assert later and all("What is the quota?" not in pane.view.document.text for pane in later)
    assert "Edited while computing" in ctl.wb.view.document.text and "xxxxx" in ctl.wb.view.document.text
    assert ctl.worker.runs <= 5  # the ready() computations, the slow one, the newest one


async def test_no_template_is_rendered_on_the_event_loop(harness):
    ctl = await harness.ready()
    chatml, threads = builtin_template("chatml"), []

    def render(messages, **variables):  # a template from outside: every render is noted with its thread
        threads.append(threading.current_thread())
        return chatml.render(messages, **variables)
    ctl.wb.set_template(ChatTemplate("outside", "server:test", None, {}, render))
    ctl.refresh()
    for text in ("a", "ab", "abc"):  # typed before the worker has looked at the template
        ctl.set_draft(text)
    await harness.idle()
    for text in ("abcd", "abcde"):  # now known to copy text verbatim: spliced in place, no render at all
        ctl.set_draft(text)
    assert "abcde" in ctl.wb.view.document.text
    await harness.idle()
    assert threads and threading.main_thread() not in threads


async def test_the_settle_after_spliced_keys_renders_nothing_and_agrees_with_a_full_computation(harness):
    """Issue 23: the pause after typing re-read the spliced document instead of rendering the whole conversation
    again (a render of 500k tokens held the worker 150-330 ms, and the next key waited for it)."""
    ctl = await harness.ready()
    chatml, renders = builtin_template("chatml"), []

    def render(messages, **variables):
        renders.append(len(messages))
        return chatml.render(messages, **variables)
    ctl.wb.set_template(ChatTemplate("counted", "server:test", None, {}, render))
    ctl.set_draft("a")
    await harness.idle()
    ctl.set_draft("ab")  # the worker has probed the template by now: this one is spliced
    await harness.idle()
    renders.clear()
    for text in ("abc", "abcd", "abcd and more"):
        ctl.set_draft(text)
    await harness.idle()  # the settle has run
    assert renders == []
    settled = ctl.wb.view
    assert "abcd and more" in settled.document.text
    full = ctl.wb.compute()
    assert all(getattr(settled, name) == getattr(full, name) for name in full.__dataclass_fields__)


# -- messages are replaced, never changed -------------------------------------------------------------------

async def test_edit_and_pin_make_a_new_snapshot_that_differs(harness):
    ctl = await harness.ready()
    before = ctl.snapshot()
    original = before.chat.messages[1]
    ctl.edit(1, "What is the quota for teams?")
    edited = ctl.snapshot()
    assert edited.chat != before.chat and edited.generation > before.generation
    assert before.chat.messages[1].text() == "What is the quota?" and original.text() == "What is the quota?"
    assert edited.chat.messages[1].text() == "What is the quota for teams?" and edited.chat.messages[1] is not original
    ctl.toggle_pin(1)
    pinned = ctl.snapshot()
    assert pinned.chat != edited.chat and pinned.chat.messages[1].pinned and not edited.chat.messages[1].pinned
    assert harness.of(ChatChanged)[-1].chat == pinned.chat
    assert any(isinstance(e, Notice) and "pinned" in e.text for e in harness.events)
    ctl.set_system_prompt("Be brief.")
    assert before.chat.messages[0].text() == "You are terse." and ctl.snapshot().chat.messages[0].text() == "Be brief."
    with pytest.raises(AttributeError):
        pinned.chat.messages = ()  # type: ignore[misc]


async def test_an_action_on_a_message_that_moved_is_refused(harness):
    ctl = await harness.ready()
    shown = ctl.snapshot().chat.messages
    ctl.delete(1, shown[1])
    generation = ctl.generation
    ctl.edit(1, "meant for the deleted one", shown[1])  # index 1 is another message now
    assert ctl.generation == generation and ctl.wb.session.messages[1].text() == "250 GB."
    assert "changed meanwhile" in harness.of(Notice)[-1].text


# -- sessions --------------------------------------------------------------------------------------------------

async def test_opening_a_file_reads_it_off_the_loop_and_starts_afresh(harness, tmp_path):
    ctl = await harness.ready()
    path = tmp_path / "other.ctxpane.json"
    save_session(Session(title="the other one", messages=[Message("user", "hi", id="m0")]), path)
    ctl.notes["m3"] = "a note from the old session"
    ctl.open_file(path)
    await harness.idle()
    assert ctl.wb.session.title == "the other one" and ctl.file.session_file == path and not ctl.notes
    assert harness.of(SessionChanged)[-1].path == path and ctl.snapshot().chat.messages[0].text() == "hi"
