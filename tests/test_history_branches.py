"""Issue 19, item 1: a history of operations, not snapshots, and branches instead of rewrites.

Before, undo restored a snapshot of every message: delete an early message, chat three turns, undo the delete,
and the three turns were gone from the session file. Now each change is an operation that undoes only itself,
and editing or re-sending an old message keeps the old continuation as a branch.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings, strategies as st

from controller_helpers import Harness, connected, harness  # noqa: F401 - harness is a fixture
from fault_server import FaultServer
from tui.context.messages import Message, Provenance
from tui.controller.branches import all_message_ids
from tui.controller.events import Notice
from tui.controller.history import OpKind
from tui.sessions.model import Session
from tui.sessions.store import load_session


def ten_messages() -> Session:
    messages = [Message("system", "You are terse.", id="s")]
    for turn in range(1, 10):
        role = "user" if turn % 2 else "assistant"
        messages.append(Message(role, f"turn {turn}", provenance=Provenance("user" if role == "user" else "model",
                                                                             True), id=f"t{turn}"))
    return Session(title="ten", messages=messages)


def shown(ctl) -> list[str]:
    return [m.text() for m in ctl.wb.session.messages]


async def test_delete_early_chat_then_undo_keeps_every_later_turn(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FaultServer(delay=0.01) as server:
        made = await connected(tmp_path, server.url + "/ok")
        ctl = made.ctl
        early = ctl.wb.session.messages[1]
        ctl.delete(1)
        for question in ("one?", "two?", "three?"):
            await made.send(question)
        later = shown(ctl)[-6:]  # three questions and their replies
        assert ctl.history.next_label == "delete #1" and ctl.history.undo()
        assert ctl.wb.session.messages[1] == early and shown(ctl)[-6:] == later
        await made.idle()
        saved = [m.text() for m in load_session(ctl.file.session_file).session.messages]
        assert saved == shown(ctl) and {"one?", "two?", "three?"} <= set(saved)
        assert ctl.history.redo() and early not in ctl.wb.session.messages and shown(ctl)[-6:] == later
        ctl.close()


async def test_editing_message_2_of_10_keeps_both_continuations_and_saves_them(harness):
    ctl = await harness.ready(ten_messages())
    old = shown(ctl)
    ctl.edit(2, "turn 2, edited")
    assert shown(ctl) == [*old[:2], "turn 2, edited"]  # the new branch: its reply comes next
    [(place, branch)] = ctl.branches()
    assert place == 2 and [m.text() for m in branch.messages] == old[2:]
    await harness.idle()
    on_disk = load_session(ctl.file.session_file).session
    assert [m.text() for m in on_disk.branches[0].messages] == old[2:]  # the file keeps every branch
    ctl.show_branch(0)
    assert shown(ctl) == old
    [(place, branch)] = ctl.branches()
    assert [m.text() for m in branch.messages] == ["turn 2, edited"]
    assert ctl.history.undo() and shown(ctl) == [*old[:2], "turn 2, edited"]  # undo: the branch shown before
    assert ctl.history.undo() and shown(ctl) == old and ctl.branches()[0][1].messages[0].text() == "turn 2, edited"


async def test_a_resend_after_more_chat_is_undone_without_losing_the_new_reply(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FaultServer(delay=0.01) as server:
        made = await connected(tmp_path, server.url + "/ok")
        ctl = made.ctl
        before = shown(ctl)
        ctl.resend_from(1)
        await made.until_replied()
        assert ctl.history.undo() and shown(ctl) == before
        kept = [m.text() for b in ctl.wb.session.branches for m in b.messages]
        assert kept, "the re-sent reply is kept as a branch"
        ctl.close()


# -- the property: random operations, undo and redo never lose a message that is on any branch ----------------
ACTIONS = st.lists(st.one_of(
    st.tuples(st.just("send"), st.text("abc ", min_size=1, max_size=5)),
    st.tuples(st.just("delete"), st.integers(0, 12)),
    st.tuples(st.just("edit"), st.integers(0, 12), st.text("xyz", min_size=1, max_size=4)),
    st.tuples(st.just("pin"), st.integers(0, 12)),
    st.tuples(st.just("rewind"), st.integers(0, 12)),
    st.tuples(st.just("show"), st.integers(0, 3)),
    st.tuples(st.just("attach"), st.text("doc", min_size=1, max_size=4)),
    st.just(("undo",)), st.just(("redo",))), min_size=1, max_size=25)


def state(session: Session) -> tuple:
    return ([m.id for m in session.messages], sorted((b.fork, tuple(m.id for m in b.messages))
                                                     for b in session.branches))


def act(ctl, action: tuple) -> None:
    messages, kind = ctl.wb.session.messages, action[0]
    if kind == "send":  # what a send and its reply add: two messages at the end
        messages.append(Message("user", action[1], id=ctl.wb.new_id()))
        messages.append(Message("assistant", "ok", provenance=Provenance("model", True), id=ctl.wb.new_id()))
    elif kind in ("delete", "edit", "pin", "rewind") and action[1] < len(messages):
        if kind == "delete":
            ctl.delete(action[1])
        elif kind == "edit":
            ctl.edit(action[1], action[2])
        elif kind == "pin":
            ctl.toggle_pin(action[1])
        else:
            ctl.editing.rewind_to(action[1])
    elif kind == "show":
        ctl.show_branch(action[1])
    elif kind == "attach":
        ctl.attach(action[1], "doc")


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(actions=ACTIONS)
def test_random_operations_with_undo_and_redo_never_lose_a_message(tmp_path_factory, actions):
    import asyncio
    asyncio.run(never_lose(tmp_path_factory.mktemp("history"), actions))


async def never_lose(folder, actions) -> None:
    made = Harness(folder)
    await made.ready(ten_messages())
    ctl = made.ctl
    for action in actions:
        before, ids_before = state(ctl.wb.session), all_message_ids(ctl.wb.session)
        history = ctl.history
        if action[0] in ("undo", "redo"):
            pending = (history.done if action[0] == "undo" else history.undone)[-1:] or [None]
            op = pending[0]
            if not (history.undo() if action[0] == "undo" else history.redo()):
                assert state(ctl.wb.session) == before
                continue
            gone = ids_before - all_message_ids(ctl.wb.session)
            # only what the operation itself added may go: an attach undone, a delete done again
            allowed = {op.message.id} if (op.kind is OpKind.INSERT and action[0] == "undo") or \
                (op.kind is OpKind.DELETE and action[0] == "redo") else set()
            assert gone <= allowed, (action, op.label, gone)
            reached = state(ctl.wb.session)  # and back, and again: the very same states
            assert (history.redo() if action[0] == "undo" else history.undo())
            assert state(ctl.wb.session) == before
            assert (history.undo() if action[0] == "undo" else history.redo())
            assert state(ctl.wb.session) == reached
        else:
            count = len(history.done)
            act(ctl, action)
            gone = ids_before - all_message_ids(ctl.wb.session)
            deleted = {history.done[-1].message.id} if action[0] == "delete" and len(history.done) > count else set()
            assert gone <= deleted, (action, gone)
        ids = [m.id for m in ctl.wb.session.messages] + [m.id for b in ctl.wb.session.branches for m in b.messages]
        assert len(ids) == len(set(ids)), ids  # every message once, shown or on a branch
    ctl.close()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(actions=ACTIONS)
def test_undo_then_redo_gives_back_the_very_same_conversation(tmp_path_factory, actions):
    import asyncio
    asyncio.run(round_trip(tmp_path_factory.mktemp("roundtrip"), actions))


async def round_trip(folder, actions) -> None:
    made = Harness(folder)
    await made.ready(ten_messages())
    ctl = made.ctl
    for action in actions:
        if action[0] not in ("undo", "redo"):
            act(ctl, action)
    after = state(ctl.wb.session)
    undone = 0
    while ctl.history.undo():  # (an edit in place under a reply sent since is not taken back: it stops there)
        undone += 1
    if ctl.history.done:
        assert ctl.history.done[-1].kind is OpKind.EDIT
    for _ in range(undone):
        assert ctl.history.redo()
    assert state(ctl.wb.session) == after
    ctl.close()


def test_a_branch_that_grew_while_shown_is_undone_whole(tmp_path):
    """Found by the property test: re-send from #1, show the old branch, send: undoing both failed (the branch
    had grown by the turn sent, and was looked for as it had been)."""
    import asyncio
    asyncio.run(round_trip(tmp_path, [("rewind", 1), ("show", 0), ("send", "a")]))


async def test_an_edit_in_place_is_not_taken_back_under_the_reply_to_it(harness):
    """Found by review: edit the last message, a reply comes, undo: the old text went back under a reply to the
    new one (a rewrite). Now undo says why not, and nothing changes."""
    ctl = await harness.ready(ten_messages())
    ctl.edit(9, "turn 9, edited")
    ctl.wb.session.messages.append(Message("assistant", "answer to the edited turn", id=ctl.wb.new_id()))
    assert not ctl.history.undo() and shown(ctl)[9] == "turn 9, edited"
    assert "messages came after it" in harness.of(Notice)[-1].text


async def test_a_branch_stays_reachable_when_its_fork_message_is_deleted(harness):
    ctl = await harness.ready(ten_messages())
    ctl.edit(2, "turn 2, edited")
    ctl.delete(1)  # the message the old branch continued from
    [(place, branch)] = ctl.branches()
    assert place == 1 and branch.messages[0].text() == "turn 2"
    assert ctl.history.undo() and ctl.branches()[0][1].fork == "t1"  # undone: it forks at t1 again
    assert ctl.history.redo() and ctl.branches()[0][0] == 1


def test_a_hostile_file_with_repeated_ids_and_a_missing_fork_opens_with_every_message_apart():
    import json
    from tui.sessions.parse import session_from_dict
    data = {"format": "ctxpane-session", "version": 1,
            "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}],
            "branches": [{"fork": "m0", "messages": [{"role": "assistant", "content": "OTHER a"}]},
                         {"fork": "nowhere", "messages": [{"role": "user", "content": "lost?"}]},
                         {"fork": "x" * 150, "messages": []}]}
    session = session_from_dict(json.loads(json.dumps(data)))
    ids = [m.id for m in session.messages] + [m.id for b in session.branches for m in b.messages]
    assert len(ids) == len(set(ids)) and len(session.branches) == 2  # the empty one is no branch
    assert session.branches[1].fork == "" and "not found" in session.branches[1].label


async def test_long_ids_branch_save_and_open_again(harness, tmp_path):
    """Found by review: a fork may be as long as any message id (200): a 100-character one locked the file."""
    session = ten_messages()
    session.messages[1] = Message("user", "turn 1", id="u" * 100)
    ctl = await harness.ready(session)
    ctl.edit(2, "turn 2, edited")
    await harness.idle()
    opened = load_session(ctl.file.session_file).session
    assert opened.branches[0].fork == "u" * 100


async def test_a_save_in_flight_keeps_the_branches_of_its_moment(harness):
    from tui.controller.saver import snapshot
    ctl = await harness.ready(ten_messages())
    ctl.edit(2, "turn 2, edited")
    taken = snapshot(ctl.wb.session)
    ctl.show_branch(0)
    ids = [m.id for m in taken.messages] + [m.id for b in taken.branches for m in b.messages]
    assert len(ids) == len(set(ids)) and {"t2", "t9"} <= set(ids)


async def test_a_read_only_session_shows_no_other_branch(harness):
    ctl = await harness.ready(ten_messages())
    ctl.edit(2, "turn 2, edited")
    ctl.file.read_only = True
    before = shown(ctl)
    ctl.show_branch(0)
    assert shown(ctl) == before and "read-only" in harness.of(Notice)[-1].text


async def test_the_palette_shows_a_branch_as_text_and_a_replay_leaves_it_out(tmp_path, monkeypatch):
    import json as json_module

    from app_helpers import isolated, make_app, settle
    from conftest import ROOT
    isolated(monkeypatch, tmp_path)
    data = json_module.loads((ROOT / "sample_sessions" / "untrusted-document.ctxpane.json").read_text())
    data["branches"] = [{"fork": data["messages"][0]["id"], "label": "[b]lbl[/b]", "messages": [
        {"role": "user", "content": "line1\nline2 [red]x[/red] [@click=app.quit]q", "id": "b1"}]}]
    path = tmp_path / "b.ctxpane.json"
    path.write_text(json_module.dumps(data))  # a session with requests: it can be replayed
    for replay in (False, True):
        app = make_app(tmp_path, offline=True, file=path, replay=replay)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot, app)
            titles = [str(c.title) + " " + str(c.help) for c in app.get_system_commands(app.screen)]
        shown_branch = [t for t in titles if t.startswith("Show branch")]
        if replay:
            assert not shown_branch, shown_branch
        else:
            assert len(shown_branch) == 1 and "\\[red]" in shown_branch[0] and "\\[b]" in shown_branch[0]
            assert "\n" not in shown_branch[0] and "line1↵line2" in shown_branch[0]


async def test_replay_names_a_message_on_a_branch_not_shown_as_such(tmp_path, monkeypatch):
    """Found by review: a request sent on a branch now put away named its messages as deleted."""
    from tui.sessions.replay import ON_BRANCH, Replayer
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FaultServer(delay=0.01) as server:
        made = await connected(tmp_path, server.url + "/ok")
        ctl = made.ctl
        await made.send("first?")
        asked = ctl.wb.session.messages[-2].id
        ctl.resend_from(1)  # the first question again: "first?" and its reply go onto a branch
        await made.until_replied()
        session = ctl.wb.session
        replayer = Replayer(session, ctl.wb.template, ctl.wb.tokenizer)
        view = replayer.stored_view(0)
        places = dict(zip(view.shape.message_ids, view.shape.places))
        assert places[asked] == ON_BRANCH and asked in {m.id for b in session.branches for m in b.messages}
        ctl.close()


async def test_the_transcript_says_where_another_version_is_kept(harness):
    ctl = await harness.ready(ten_messages())
    ctl.edit(2, "turn 2, edited")
    edited = ctl.wb.session.messages[2]
    assert ctl.chat_state().figures[edited.id].endswith("1 other version kept (palette: Show branch at #2)")
    ctl.show_branch(0)  # the old one shown: the edited one is the other version now
    assert "1 other version kept" in ctl.chat_state().figures[ctl.wb.session.messages[2].id]
