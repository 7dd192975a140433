"""The tap's memory after large replies (issue 39, item 5): what it keeps of a reply is bounded, not a second copy of
it in every open conversation. The figures themselves: tests/benchmarks/bench_tap_memory.py."""

from __future__ import annotations

from tui.sessions.log_writer import LogWriter
from tui.sessions.model import RequestRecord, Session
from tui.tap.conversations import LONG_KEY, Conversations

BIG = 5 * 1024 * 1024  # characters of a large reply


def test_a_conversation_holds_a_bounded_key_of_a_large_reply_and_still_matches_it():
    """Each open conversation held its last reply whole as its key (30 MB replies: 720 MB in 24 conversations)."""
    conversations = Conversations()
    reply = "x" * BIG
    question = [{"role": "user", "content": "write a lot"}]
    first = conversations.commit(conversations.place(question, "m"), question, "m")
    first.answered({"content": reply})
    assert len(first.reply_key) < LONG_KEY + 200
    follow = [*question, {"role": "assistant", "content": reply}, {"role": "user", "content": "more"}]
    match = conversations.place(follow, "m")
    assert match.conversation is first and match.message_ids == ["m0", "m1", ""]
    other = [*question, {"role": "assistant", "content": reply[:-1] + "y"}, {"role": "user", "content": "more"}]
    assert conversations.place(other, "m").message_ids == ["m0", "", ""]  # a reply that differs at its end is another


def test_the_writer_keeps_a_records_texts_without_copying_them(tmp_path):
    """The figures a writer keeps to compare a request again held their own copy of its reply's texts."""
    session = Session(title="tap")
    content = "y" * BIG
    session.requests.append(RequestRecord(1, "t", {"model": "m", "messages": []}, reply={"content": content}))
    writer = LogWriter(tmp_path / "tap.ctxpane.json", sync=False)
    writer.append(session)
    kept = [figures["reply"]["content"] for figures in writer.figures.values()]
    assert kept and all(text is content for text in kept)
