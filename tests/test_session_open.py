"""Opening a session: read in a worker, the cache boundary restored from the last record only, once.

A session with 2,000 stored requests opens with the boundary the engine computes directly; no
step of it recurses; the first screen answers keys while the file is read and the boundary found;
and a restore that a newer state outdated never lands over it.
"""

from __future__ import annotations

import shutil
import threading
import time
from dataclasses import replace

import pytest

from app_helpers import isolated, make_app, settle
from tui.app.chat.composer import Composer
from tui.controller.workbench import Workbench
from tui.context.untrusted.fences import FenceStyle
from tui.context.messages import Message, Provenance, message_from_dict
from tui.context.request import RequestSettings, build_request
from tui.context.templates.library import builtin_template
from tui.context.tokens.counting import get_tokenizer
from tui.sessions import replay
from tui.sessions.model import RequestRecord, Session
from tui.sessions.replay import Replayer
from tui.sessions.store import save_session
from waiting import eventually

SIZE = (150, 42)
REQUESTS = 2000


def long_session(requests: int = REQUESTS) -> Session:
    """`requests` turns; each record holds a short window of what came before, the last one all of it."""
    messages = [Message("system", "You answer briefly.", provenance=Provenance("system_prompt", True), id="m0")]
    session = Session(title="long", tokenizer="o200k_base")
    for number in range(1, requests + 1):
        messages.append(Message("user", f"question {number}: what is {number} squared?",
                                provenance=Provenance("user", True), id=f"m{len(messages)}"))
        sent = messages if number == requests else [messages[0], *messages[-3:]]
        session.requests.append(RequestRecord(
            number=number, time="2026-11-02T09:00:00+00:00",
            body={"model": "m", "messages": [m.to_wire() for m in sent]}, reply={"content": "ok"},
            template="chatml", tokenizer="o200k_base", message_count=len(messages),
            message_ids=[m.id for m in sent]))
        messages.append(Message("assistant", f"{number * number}.", provenance=Provenance("model", True),
                                id=f"m{len(messages)}"))
    session.messages = messages
    return session


async def until(pilot, app, condition, seconds: float = 60.0) -> None:
    """Wait for `condition` (the opening's workers chain one another: tokenizer, restore, compute), then settle."""
    await eventually(condition, seconds, "the session to open", pilot=pilot)
    await settle(pilot, app)


def opened(app, path, session):
    return lambda: (app.session_file == path and len(app.wb.session.messages) == len(session.messages)
                    and app.wb.view is not None and not app.wb.tokenizer_pending and not app.wb.restore_owed
                    and app.wb.view.prefix.total_tokens > 1000)


def engine_prefix(session: Session):
    """The boundary computed by the engine directly: the last body rendered, then the conversation."""
    template, tokenizer = builtin_template("chatml"), get_tokenizer("o200k_base")
    last = session.requests[-1]
    stored = [message_from_dict({**m, "id": last.message_ids[i]}, i) for i, m in enumerate(last.body["messages"])]
    then = RequestSettings(template, tokenizer, {}, None, True, replace(session.policy_settings(), name="keep-all"),
                           FenceStyle(enabled=False))
    previous = build_request(stored, then).shape
    now = RequestSettings(template, tokenizer, dict(session.variables), session.tools, True,
                          session.policy_settings(), FenceStyle(enabled=session.fences))
    return build_request(session.messages, now, previous, len(session.requests) + 1).prefix


@pytest.fixture(scope="module")
def long_file_made(tmp_path_factory):
    path = tmp_path_factory.mktemp("long") / "long.ctxpane.json"
    save_session(long_session(), path)
    return path


@pytest.fixture()
def long_file(long_file_made, tmp_path):
    """A copy for each test: what one test leaves in it (the composer's text, saved at quit) is not the next's."""
    path = tmp_path / long_file_made.name
    shutil.copyfile(long_file_made, path)
    return path


@pytest.fixture()
def counted(monkeypatch):
    """Counts every stored request rendered, by what asked for it."""
    calls = {"stored_shape": 0, "stored_view": 0}
    for name in calls:
        original = getattr(Replayer, name)

        def wrapper(self, index, _original=original, _name=name):
            calls[_name] += 1
            return _original(self, index)
        monkeypatch.setattr(Replayer, name, wrapper)
    return calls


async def test_2000_requests_open_with_the_engines_boundary_restored_once(monkeypatch, tmp_path, long_file, counted):
    isolated(monkeypatch, tmp_path)
    session = long_session()
    expected = engine_prefix(session)
    assert expected.cause.startswith("none: the whole previous request is reused") and expected.tokens > 10_000
    app = make_app(tmp_path, offline=True, file=long_file)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, app, opened(app, long_file, session))
        assert app.wb.tokenizer.name == "o200k_base" and app.wb.previous is not None
        prefix = app.wb.view.prefix
        assert (prefix.chars, prefix.tokens, prefix.total_tokens, prefix.cause, prefix.predicted_cached) == \
            (expected.chars, expected.tokens, expected.total_tokens, expected.cause, expected.predicted_cached)
        # once at start-up, from the last record alone: no other record rendered, none twice
        assert app.wb.restores == 1 and counted == {"stored_shape": 1, "stored_view": 0}
        await pilot.press(*"and 2001?")
        await until(pilot, app, lambda: app.wb.view.prefix.total_tokens > expected.total_tokens)
        assert app.wb.restores == 1 and counted["stored_shape"] == 1  # typing never restores again
        assert app.wb.view.prefix.tokens == expected.tokens


@pytest.mark.bulk
def test_replaying_every_step_of_2000_needs_no_recursion():
    session = long_session()
    replayer = Replayer(session, builtin_template("chatml"), get_tokenizer("o200k_base"))
    last = replayer.stored_view(REQUESTS - 1)  # each step against the one before: a loop, any length
    assert len(replayer._views) == REQUESTS
    assert last.prefix.cause.startswith("new message") or last.prefix.chars > 0
    assert replayer.stored_shape(REQUESTS - 1).text == last.shape.text


def test_a_stale_restore_never_overwrites_a_request_sent_meanwhile(monkeypatch):
    session = long_session(3)
    wb = Workbench(session, builtin_template("chatml"), get_tokenizer("o200k_base"))
    started, release = threading.Event(), threading.Event()
    original = Replayer.stored_shape

    def slow(self, index):
        started.set()
        release.wait(10)
        return original(self, index)
    monkeypatch.setattr(Replayer, "stored_shape", slow)
    worker = threading.Thread(target=wb.restore_previous)
    worker.start()
    assert started.wait(10)
    monkeypatch.setattr(Replayer, "stored_shape", original)
    other = Workbench(session, wb.template, wb.tokenizer)  # meanwhile the next request is sent
    view = other.compute(with_draft=False)
    wb.start_record(wb.request_body(view), view)
    newer = wb.previous
    release.set()
    worker.join(10)
    assert not worker.is_alive() and wb.restores == 1
    assert wb.previous is newer and not wb.restore_owed  # the restore's older result was thrown away


async def test_first_screen_answers_keys_while_the_file_is_read_and_the_boundary_found(monkeypatch, tmp_path,
                                                                                      long_file):
    isolated(monkeypatch, tmp_path)
    done: dict[str, float] = {}
    load = replay.Replayer.stored_shape

    from tui.controller import opening as opening_module  # where the session file is read
    original_load = opening_module.load_session

    # A slow disk and a slow search for the boundary: each is held until the test has typed a key (a fixed
    # second was not enough on a loaded machine, where the first frame can come later than that).
    read_on, found_on = threading.Event(), threading.Event()

    def slow_load(path):
        read_on.wait(30)
        opened = original_load(path)
        done["loaded"] = time.monotonic()
        return opened

    def slow_shape(self, index):
        found_on.wait(30)
        result = load(self, index)
        done["restored"] = time.monotonic()
        return result
    monkeypatch.setattr(opening_module, "load_session", slow_load)
    monkeypatch.setattr(replay.Replayer, "stored_shape", slow_shape)
    app = make_app(tmp_path, offline=True, file=long_file)
    async with app.run_test(size=SIZE) as pilot:
        composer = app.query_one(Composer)
        await pilot.press("a")
        echoed = time.monotonic()
        assert composer.text == "a" and "loaded" not in done  # the loop was free while the file was read
        read_on.set()
        await eventually(lambda: app.session_file == long_file, 10, "the file to be read", pilot=pilot, poll=0.01)
        await pilot.press("b")
        assert composer.text == "ab" and "restored" not in done  # ... and while the boundary was found
        found_on.set()
        await until(pilot, app, lambda: "restored" in done and app.wb.previous is not None)
        assert done["loaded"] > echoed
        assert app.wb.draft == composer.text == "ab"  # what was typed while the file was read is kept
