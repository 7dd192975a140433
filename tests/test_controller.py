"""The controller's transitions, on a plain asyncio loop: no Textual anywhere.

Each transition changes the state, bumps the generation and tells the listener; a computation that
started before a change never overwrites the newer view; edits and pins make new snapshots (the old
ones are untouched); a stopped or failed reply keeps what arrived, the user's message and the draft.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from dataclasses import dataclass, field

import pytest

from fault_server import FaultServer
from tui.context.messages import Message, Provenance
from tui.controller import AsyncioRuntime, Controller
from tui.controller.events import (ChatChanged, Notice, PaneChanged, ReplyEnded, ReplyProgress, ReplyStarted,
                                   SessionChanged, StatusChanged)
from tui.context.template_library import ChatTemplate, builtin_template, template_from_text
from tui.sessions.model import Session
from tui.sessions.store import load_session, save_session


@dataclass
class Settings:
    """What the controller reads of the app's settings (tui/app/config.py has the real ones)."""

    base_url: str = ""
    model: str = ""
    api_key_env: str = "OPENAI_API_KEY"
    template: str = ""
    tokenizer: str = "o200k_base"
    scan_local: bool = False
    source: dict = field(default_factory=lambda: {"base_url": "flag"})


def conversation() -> Session:
    return Session(title="three turns", messages=[
        Message("system", "You are terse.", provenance=Provenance("system_prompt", True), id="sys"),
        Message("user", "What is the quota?", id="m1"),
        Message("assistant", "250 GB.", provenance=Provenance("model", True), id="m2"),
        Message("user", "And the price?", id="m3")])


class Harness:
    def __init__(self, tmp_path, **settings) -> None:
        self.events: list = []
        self.runtime = AsyncioRuntime()
        self.ctl = Controller(Settings(**settings), self.runtime, self.events.append, tmp_path / "sessions")

    async def idle(self, seconds: float = 0.05) -> None:
        await self.runtime.idle(settle=seconds)

    def of(self, kind) -> list:
        return [event for event in self.events if isinstance(event, kind)]

    async def ready(self, session: Session | None = None, path=None) -> Controller:
        """A session open, the tokenizer loaded, its view computed."""
        self.ctl.adopt(session or conversation(), path)
        self.ctl.load_tokenizer()
        await self.idle()
        assert self.ctl.wb.view is not None
        return self.ctl


@pytest.fixture()
async def harness(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    made = Harness(tmp_path)
    yield made
    made.ctl.close()


async def connected(tmp_path, url: str) -> Harness:
    made = Harness(tmp_path, base_url=url)
    await made.ready()
    made.ctl.connect()
    await made.idle()
    assert made.ctl.client is not None, [e for e in made.events if isinstance(e, StatusChanged)]
    return made


def test_the_controller_imports_no_textual():
    code = ("import sys, tui.controller, tui.controller.controller, tui.controller.sending;"
            "print(','.join(m for m in sys.modules if m.split('.')[0] in ('textual', 'tui') and "
            "(m.startswith('textual') or m.startswith('tui.app'))))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == ""


# -- the draft and the computation ---------------------------------------------------------------------

async def test_the_draft_reaches_the_pane_and_a_later_computation(harness):
    ctl = await harness.ready()
    before = ctl.generation
    ctl.set_draft("And the price in euros?")
    assert ctl.generation == before + 1
    ctl.set_draft("And the price in euros?")  # the same text again is no change
    assert ctl.generation == before + 1
    await harness.idle(0.5)  # a spliced draft is computed in full after a pause
    pane = harness.of(PaneChanged)[-1].pane
    assert "And the price in euros?" in pane.view.document.text
    assert pane.draft_index == len(ctl.wb.session.messages) and ctl.snapshot().draft == "And the price in euros?"


async def test_every_transition_bumps_the_generation_and_shows_the_chat(harness, tmp_path):
    ctl = await harness.ready()
    steps = {
        "edit": lambda: ctl.edit(1, "What is the quota now?"),
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
    await harness.idle(0.6)
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
    await harness.idle(0.5)
    for text in ("abcd", "abcde"):  # now known to copy text verbatim: spliced in place, no render at all
        ctl.set_draft(text)
    assert "abcde" in ctl.wb.view.document.text
    await harness.idle(0.5)
    assert threads and threading.main_thread() not in threads


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


# -- sending ------------------------------------------------------------------------------------------------

async def test_offline_send_is_refused_and_the_draft_stays(harness):
    ctl = await harness.ready()
    ctl.set_draft("hello")
    assert not ctl.submit("hello")
    assert ctl.wb.draft == "hello" and len(ctl.wb.session.messages) == 4 and not ctl.streaming
    assert "offline" in harness.of(Notice)[-1].text


async def test_send_streams_the_reply_and_keeps_it(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FaultServer(delay=0.01) as server:
        made = await connected(tmp_path, server.url + "/ok")
        ctl = made.ctl
        assert ctl.submit("hello there") and ctl.streaming
        assert not ctl.submit("again")  # one request at a time
        await made.idle(0.1)
        assert not ctl.streaming
        kinds = [type(e) for e in made.events if isinstance(e, (ReplyStarted, ReplyProgress, ReplyEnded))]
        assert kinds[0] is ReplyStarted and kinds[-1] is ReplyEnded and ReplyProgress in kinds
        last = ctl.wb.session.messages[-1]
        assert last.role == "assistant" and last.text() == "Hello, wörld 👋" and not last.incomplete
        assert ctl.wb.session.messages[-2].text() == "hello there"
        assert server.requests[-1]["body"]["messages"][-1] == {"role": "user", "content": "hello there"}
        saved = json.loads(ctl.file.session_file.read_text())
        assert saved["requests"][0]["reply"]["content"] == "Hello, wörld 👋"
        assert made.of(ChatChanged)[-1].chat.messages[-1] == last
        ctl.close()


async def test_stop_mid_stream_keeps_the_partial_reply(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FaultServer(delay=0.2) as server:
        made = await connected(tmp_path, server.url + "/slow")
        ctl = made.ctl
        ctl.submit("tell me a story")
        for _ in range(100):
            await asyncio.sleep(0.05)
            if any("reply" in e.content for e in made.of(ReplyProgress)):
                break
        ctl.stop()
        await made.idle(0.1)
        last = ctl.wb.session.messages[-1]
        assert not ctl.streaming and last.role == "assistant" and last.incomplete
        assert last.text().startswith("partial reply")
        assert ctl.wb.session.requests[-1].reply["incomplete"] is True
        assert ctl.snapshot().chat.notes[last.id].startswith("■ stopped")
        assert json.loads(ctl.file.session_file.read_text())["messages"][-1]["content"].startswith("partial")
        ctl.close()


@pytest.mark.parametrize("scenario", ["cut", "boom"])
async def test_a_failed_send_keeps_the_users_message_and_draft(tmp_path, monkeypatch, scenario):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FaultServer(delay=0.05) as server:
        made = await connected(tmp_path, server.url + f"/{scenario}")
        ctl = made.ctl
        ctl.submit("my question")
        ctl.set_draft("the next one, typed while it was sent")
        await made.idle(0.1)
        messages = ctl.wb.session.messages
        question = next(m for m in messages if m.text() == "my question")
        assert question.role == "user" and not ctl.streaming
        assert ctl.wb.draft == "the next one, typed while it was sent"
        assert made.of(StatusChanged)[-1].text.startswith("✗") and made.of(StatusChanged)[-1].style == "red"
        saved = json.loads(ctl.file.session_file.read_text())
        assert any(m["content"] == "my question" for m in saved["messages"])
        if scenario == "cut":  # something arrived: kept, incomplete, with the reason under it
            assert messages[-1].incomplete and messages[-1].text().startswith("partial reply kept")
            assert "closed the connection" in ctl.snapshot().chat.notes[messages[-1].id]
        ctl.close()


async def test_a_template_that_refuses_sends_nothing_and_keeps_the_message(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FaultServer(delay=0.01) as server:
        made = await connected(tmp_path, server.url + "/ok")
        ctl = made.ctl
        ctl.wb.set_template(template_from_text("{{ raise_exception('no, not this one') }}", "server:test", "t"))
        sent = len(server.requests)
        ctl.submit("will not go")
        await made.idle(0.1)
        assert not ctl.streaming and ctl.wb.session.messages[-1].text() == "will not go"
        assert len(server.requests) == sent and "rejects the conversation" in made.of(Notice)[-1].text
        ctl.close()


async def test_resend_from_a_message_drops_what_follows_and_sends(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FaultServer(delay=0.01) as server:
        made = await connected(tmp_path, server.url + "/ok")
        ctl = made.ctl
        ctl.resend_from(2)  # the assistant's answer: re-sent from the user message before it
        await made.idle(0.1)
        assert [m.text() for m in ctl.wb.session.messages[:2]] == ["You are terse.", "What is the quota?"]
        assert server.requests[-1]["body"]["messages"][-1] == {"role": "user", "content": "What is the quota?"}
        assert ctl.wb.session.messages[-1].role == "assistant" and len(ctl.wb.session.messages) == 3
        ctl.close()


async def test_summarise_makes_a_summary_before_sending(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FaultServer(delay=0.01) as server:
        made = await connected(tmp_path, server.url + "/ok")
        ctl = made.ctl
        for i in range(8):
            ctl.wb.session.messages.append(Message("user" if i % 2 == 0 else "assistant", f"turn {i} " + "words " * 30,
                                                   id=f"t{i}"))
        ctl.wb.set_policy(name="summarise", context_window=260, max_tokens=20)
        ctl.refresh()
        ctl.submit("what now?")
        await made.idle(0.1)
        assert ctl.wb.session.policy["summary"] == "whole reply"
        assert any("summary made" in e.text for e in made.of(StatusChanged))
        assert any("whole reply" in m["content"] for m in server.requests[-1]["body"]["messages"])
        ctl.close()


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


# -- the real server --------------------------------------------------------------------------------------------

@pytest.mark.server
async def test_a_real_streaming_send_to_llama_server(llama_server, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    made = Harness(tmp_path, base_url=llama_server, tokenizer="")
    made.ctl.adopt(Session(), None)
    made.ctl.connect()
    await made.idle(0.2)
    ctl = made.ctl
    assert ctl.client is not None and "llama.cpp" in made.of(StatusChanged)[-1].text
    ctl.set_draft("Say hello in three words.")
    await made.idle(0.6)
    counted = ctl.wb.view.sent_tokens
    assert ctl.submit("Say hello in three words.")
    await made.idle(0.2)
    record = ctl.wb.session.requests[-1]
    arrived = record.reply.get("content") or ""
    assert not record.incomplete and (arrived or record.reply.get("reasoning")), record.reply  # a random model
    if arrived:  # (it may think and say nothing)
        assert ctl.wb.session.messages[-1].role == "assistant" and ctl.wb.session.messages[-1].text() == arrived
    assert made.of(ReplyStarted) and made.of(ReplyEnded)
    assert record.usage and record.usage["prompt_tokens"] == counted == record.document_tokens
    ctl.close()
