"""Replay shows each step with its own messages and never crashes (issue 18).

Before: `ctxpane replay FILE --step N` on a session whose requests dropped messages and that got shorter since
exited with IndexError (tui/app/pane/document_tab.py): a step's ledger names messages by their place in the session
when the request was made, and the notes were looked up in the session as it is now; in tap recordings and
replays the "✂ dropped" notes quoted another message's text.
"""

from __future__ import annotations

from app_helpers import document_rows, isolated, make_app, plain, settle
from tui.app.screens.replay import ReplayScreen
from tui.context.messages import Message
from tui.sessions.model import RequestRecord, Session
from tui.sessions.store import save_session

WORDS = ["apple", "banana", "cherry", "damson", "elder", "fig", "grape", "hazel", "iris", "juniper"]


def shrunk_session() -> Session:
    """Ten messages, two requests that left the oldest out, then all but the last three messages deleted."""
    messages = [Message("user" if i % 2 == 0 else "assistant", f"{word} " * 6, id=f"m{i}")
                for i, word in enumerate(WORDS)]
    session = Session(title="shrunk", messages=messages, policy={"name": "drop-oldest"})
    for number, (first_kept, count) in enumerate([(4, 7), (6, 10)], start=1):
        sent = messages[first_kept:count]
        dropped = [{"message": i, "message_id": f"m{i}", "role": messages[i].role, "tokens": 9,
                    "policy": "drop-oldest", "reason": "over the window", "since_request": 1}
                   for i in range(first_kept)]
        session.requests.append(RequestRecord(number, "2026-12-01T00:00:00+00:00",
                                              {"model": "m", "messages": [m.to_wire() for m in sent]},
                                              message_count=count, message_ids=[m.id for m in sent],
                                              dropped=dropped))
    session.messages = [messages[0], messages[8], messages[9]]  # deleted since: m1..m7
    return session


async def test_replaying_a_step_of_a_shrunk_session_quotes_each_dropped_message_by_id(tmp_path, monkeypatch):
    isolated(monkeypatch, tmp_path)
    path = tmp_path / "shrunk.ctxpane.json"
    save_session(shrunk_session(), path)
    app = make_app(tmp_path, offline=True, file=path, replay=True, replay_step=2)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        assert isinstance(app.screen, ReplayScreen)
        rows = "\n".join(document_rows(app))
        app.screen.query_one("#tabs").active = "ledger"
        await settle(pilot, app)
        ledger = plain(app.screen.query_one("#ledger-table"))
    notes = [row for row in rows.splitlines() if "✂" in row]
    assert len(notes) == 6, rows
    assert "#0 dropped" in notes[0] and "apple apple" in notes[0]  # still in the session: quoted, its place now
    for note, place in zip(notes[1:], [1, 2, 3, 4, 5]):
        assert f"(then #{place}) dropped" in note and "— (no" in note, note  # (the row wraps after it)
    for word in WORDS[1:6]:  # never a neighbour's words
        assert not any(word in note for note in notes), notes
    # the Ledger tab names them as the notes do: the place now, or the place then and that it is gone
    assert "#0" in ledger and "(then #1, gone since)" in ledger and "(then #5, gone since)" in ledger, ledger


def test_a_repeated_id_never_makes_a_note_quote_another_message():
    """Found by review: a file made elsewhere with two messages of one id; the note quoted the later one."""
    from tui.context.drop_notes import drop_notes
    from tui.context.policy.truncation import PolicySettings
    from tui.context.request import RequestSettings, build_request
    from tui.context.templates.library import builtin_template
    from tui.context.tokens.tokenizers import get_tokenizer
    messages = [Message("user", "OLDEST question about apples", id="x"), Message("assistant", "an answer", id="x"),
                Message("user", "LATER question about pears", id="m2")]
    view = build_request(messages, RequestSettings(builtin_template("chatml"), get_tokenizer("qwen3"),
                                                   policy=PolicySettings("keep-last-n", keep_last=1)))
    notes = drop_notes(view, messages)
    assert notes and "OLDEST question about apples" in notes[0].text and "#0" in notes[0].text


def test_the_cache_cause_of_a_replayed_step_names_messages_as_the_chat_does_now(tmp_path):
    """Found by review: in replay the cause said '#0, #1' by the body's own order, naming other messages."""
    from tui.context.templates.library import builtin_template
    from tui.context.tokens.tokenizers import get_tokenizer
    from tui.sessions.replay import Replayer
    session = shrunk_session()
    replayer = Replayer(session, builtin_template("chatml"), get_tokenizer("qwen3"))
    cause = replayer.stored_view(1).prefix.cause
    assert "#0" not in cause.split("dropped")[0] and "deleted since" in cause, cause
