"""Was the phrase in each request's window: real sample sessions, read through the session reader."""

from __future__ import annotations

from conftest import ROOT
from tui.context.policy.window_search import Part, ReplyCheck, Standing, search_windows
from tui.sessions.store import load_session
from tui.sessions.window_sources import record_windows


def searched(name: str, phrase: str):
    session = load_session(ROOT / "sample_sessions" / f"{name}.ctxpane.json").session
    return search_windows(phrase, record_windows(session.requests), None, session.messages)


def test_a_phrase_dropped_by_the_policy_is_present_early_and_absent_later_with_who_left_it_out():
    result = searched("long-conversation-dropped-answer", "blue heron")
    assert result.numbers(Standing.PRESENT) == [1, 2, 3, 4, 5, 6]
    assert result.numbers(Standing.ABSENT) == [7, 8]
    first, seventh = result.findings[0], result.findings[6]
    assert [(o.place, o.role, o.part, o.offset) for o in first.occurrences] == [(1, "user", Part.CONTENT, 41)]
    assert [(h.place, h.policy, h.since) for h in seventh.left_out][:1] == [(1, "drop-oldest", 7)]


def test_case_is_ignored_letter_by_letter_and_spaces_match_any_whitespace():
    assert searched("long-conversation-dropped-answer", "BLUE   heron").numbers(Standing.PRESENT) == [1, 2, 3, 4, 5, 6]
    assert searched("long-conversation-dropped-answer", "blueheron").numbers(Standing.PRESENT) == []


def test_a_phrase_in_a_tool_result_is_found_in_the_tool_message():
    result = searched("forged-tool-result", "all systems operational")
    assert result.numbers(Standing.PRESENT) == [2]
    (hit,) = result.findings[1].occurrences
    assert (hit.place, hit.role, hit.part) == (3, "tool", Part.CONTENT)


def test_present_in_the_window_but_not_in_the_reply_is_said_apart():
    result = searched("long-conversation-dropped-answer", "blue heron")
    assert result.findings[0].reply is ReplyCheck.CONTAINS  # "Noted: code name BLUE HERON"
    assert result.findings[1].standing is Standing.PRESENT and result.findings[1].reply is ReplyCheck.LACKS
