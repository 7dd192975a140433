"""Undo and branches in a real terminal (tmux) against the real server (issue 19): delete an early message, chat,
undo the delete: every later turn is kept; re-send from an early message: the old continuation is a branch the
palette shows again, and the file keeps both."""

import re

import pytest

from test_e2e_tmux import tmux, wait_for_reply  # noqa: F401 - tmux is a fixture
from tui.sessions.store import load_session
from waiting import until


def ask(tmux, question: str, count: int) -> None:
    tmux.keys(question, literal=True)
    tmux.wait_for(re.escape(question) + r"<\|im_end\|>")
    tmux.keys("Enter")
    assert wait_for_reply(tmux, count, 60) is not None, tmux.screen()


def start_seeded(tmux, server: str) -> None:
    """At the driver's fixed seed (these tests count the messages the file holds)."""
    tmux.start("--base-url", server, "--no-scan")


def saved_texts(tmux, key: str = "messages") -> list[str]:
    session = load_session(tmux.sessions()[0]).session
    if key == "branches":
        return [m.text() for b in session.branches for m in b.messages]
    return [m.text() for m in session.messages]


@pytest.mark.server
def test_delete_early_chat_then_undo_keeps_the_later_turns(llama_server, tmux):
    start_seeded(tmux, llama_server)
    tmux.wait_for(r"llama\.cpp at http://127\.0\.0\.1")
    ask(tmux, "Early question A?", 1)
    tmux.keys("BTab")  # to the transcript: the cursor is on the last message
    tmux.wait_for(r"█ assistant #1")
    tmux.keys("k")  # up to #0, the early question
    tmux.wait_for(r"█ user #0")
    tmux.keys("d")
    tmux.wait_for(r"Delete user #0\?")
    tmux.keys("y")
    until(lambda: "Early question A?" not in saved_texts(tmux), 10, lambda: saved_texts(tmux))
    # (after a message dialog the composer has the focus: typing goes there)
    for number, question in enumerate(("Later B?", "Later C?", "Later D?"), start=2):
        ask(tmux, question, number)
    tmux.keys("BTab")
    tmux.wait_for(r"█ assistant #\d")
    tmux.keys("C-z")
    tmux.wait_for(r"undone: delete #0")
    until(lambda: saved_texts(tmux)[:1] == ["Early question A?"], 10, lambda: saved_texts(tmux))
    texts = saved_texts(tmux)
    assert [t for t in texts if t.startswith("Later")] == ["Later B?", "Later C?", "Later D?"], texts


@pytest.mark.server
def test_resend_from_an_early_question_keeps_the_old_continuation_as_a_branch(llama_server, tmux):
    start_seeded(tmux, llama_server)
    tmux.wait_for(r"llama\.cpp at http://127\.0\.0\.1")
    for number, question in enumerate(("First Q?", "Second Q?", "Third Q?"), start=1):
        ask(tmux, question, number)
    before = saved_texts(tmux)
    tmux.keys("BTab")
    tmux.wait_for(r"█ assistant #5")
    for _ in range(5):  # from the last reply (#5) up to the first question (#0)
        tmux.keys("k")
    tmux.wait_for(r"█ user #0")
    tmux.keys("r")
    tmux.wait_for(r"kept as a branch")
    tmux.keys("y")
    resent = wait_for_reply(tmux, 4, 60)
    assert resent.reply.get("content"), resent.reply  # (the seed: the same reply as the first time)
    until(lambda: saved_texts(tmux) == ["First Q?", resent.reply["content"]], 10, lambda: saved_texts(tmux))
    assert saved_texts(tmux, "branches") == before[1:]  # the old continuation, in the file
    tmux.keys("C-p")
    tmux.keys("Show branch", literal=True)
    tmux.wait_for(r"Show branch at #1")
    tmux.keys("Enter")
    until(lambda: saved_texts(tmux) == before, 10, lambda: saved_texts(tmux))  # the old one shown again
    assert len(saved_texts(tmux, "branches")) == 1  # and the re-sent reply kept in turn
