"""What the isolated reviewer is shown and how it is asked: every turn it sees is whole (a long user turn's last
words reach it), turns are left out (the model's and the tools' first, then the user's oldest) and said, the last
user turns never; the tool's definition and the exact command line are in its prompt, fenced; the verdict's schema rides where each API takes it, and the
verdict is read back from there. (A reviewer model set apart: tests/test_tool_calls.py.)"""

from __future__ import annotations

import json


from tool_call_server import ALLOW
from tui.context.messages import Message, Provenance
from tui.context.templates.library import plain_chatml
from tui.context.tools.calls import pending_calls
from tui.context.tools.review import (TRANSCRIPT_CHARS, VERDICT_NAME, VERDICT_SCHEMA, Outcome, parse_verdict,
                                      review_prompt, review_request, reviewer_api, verdict_text)
from tui.controller.workbench import CharEstimate
from tui.sessions.tool_file import tools_from_value

ESCAPES = frozenset({"<|im_start|>", "<|im_end|>"})
TOOLS = tools_from_value([{"type": "function",
                           "function": {"name": "delete_file", "description": "Deletes the file at `path`, for good.",
                                        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}},
                           "risky": True, "command": ["python3", "tools/delete file.py", "--force"]}])


def call_turns(*before: Message) -> list[Message]:
    return [*before, Message("assistant", None, tool_calls=[{"id": "c1", "type": "function", "function": {
        "name": "delete_file", "arguments": '{"path": "thesis"}'}}], provenance=Provenance("model", True), id="a9")]


def prompt_of(messages: list[Message]) -> str:
    return review_prompt(messages, pending_calls(messages)[0], ESCAPES, TOOLS.spec("delete_file"))


def test_the_end_of_a_long_user_turn_reaches_the_reviewer():
    long = "Tidy the notes folder. " + "filler " * 2_850 + "But do NOT delete anything under thesis."
    assert len(long) > 20_000
    prompt = prompt_of(call_turns(Message("user", long, id="u1")))
    assert "do NOT delete anything under thesis." in prompt and "[cut" not in prompt


def test_the_tools_definition_and_the_exact_command_are_shown_fenced():
    prompt = prompt_of(call_turns(Message("user", "clean up", id="u1")))
    assert "Deletes the file at `path`, for good." in prompt and '"parameters"' in prompt
    assert "python3 'tools/delete file.py' --force" in prompt  # as a shell would quote it: the exact argv
    definition = prompt.index("Deletes the file")
    assert prompt.rindex("<untrusted", 0, definition) > prompt.rindex("</untrusted", 0, definition)  # inside a fence


def test_the_oldest_whole_turns_are_left_out_first_and_said_the_last_user_turns_never():
    old = [Message("user" if n % 2 == 0 else "assistant", f"old turn {n} " + "x" * 9_000, id=f"o{n}")
           for n in range(12)]
    last = Message("user", "delete thesis now " + "y" * (TRANSCRIPT_CHARS + 5_000) + " END-OF-ASK", id="u9")
    prompt = prompt_of(call_turns(*old, last))
    assert "END-OF-ASK" in prompt  # the last user turn whole, even over the budget
    assert "old turn 0 " not in prompt and "old turn 11 " not in prompt
    assert "Transcript (14 turns, 12 earlier turns left out" in prompt
    fits = prompt_of(call_turns(*old, Message("user", "delete thesis now", id="u9")))
    kept = [n for n in range(12) if f"old turn {n} " in fits]
    assert kept == [0, 2, 4, 6, 8, 10]  # the model's turns left out first, the user's own words kept
    assert "6 earlier turns left out" in fits
    tight = [Message("user", f"old turn {n} " + "x" * 14_000, id=f"o{n}") if n % 2 == 0 else
             Message("assistant", "ok", provenance=Provenance("model", True), id=f"o{n}") for n in range(11)]
    kept = [n for n in range(11) if f"old turn {n} " in prompt_of(call_turns(*tight, Message("user", "now", id="u9")))]
    assert kept and kept == list(range(kept[0], 11, 2)) and kept[0] > 0  # then the user's newest kept, the oldest dropped


def body_for(api: str, kind: str = "") -> dict:
    messages = call_turns(Message("user", "delete thesis", id="u1"))
    return review_request(messages, pending_calls(messages)[0], plain_chatml(), CharEstimate(), "judge", ESCAPES,
                          TOOLS.spec("delete_file"), api, kind).body


def test_each_api_carries_the_verdicts_schema_where_it_takes_one():
    chat = body_for("chat")
    assert chat["response_format"]["json_schema"]["schema"] == VERDICT_SCHEMA and "tools" not in chat
    messages = body_for("messages")
    assert messages["tool_choice"] == {"type": "tool", "name": VERDICT_NAME}
    assert [t["name"] for t in messages["tools"]] == [VERDICT_NAME] and messages["tools"][0]["input_schema"] == VERDICT_SCHEMA
    assert "system" in messages and "response_format" not in messages
    responses = body_for("responses")
    assert responses["text"]["format"]["schema"] == VERDICT_SCHEMA and "input" in responses
    assert "response_format" not in responses  # a strict Responses API refuses a field it does not know
    assert body_for("responses", "llama.cpp")["response_format"]["json_schema"]["schema"] == VERDICT_SCHEMA
    assert reviewer_api("messages", "llama.cpp") == "chat" and "response_format" in body_for("messages", "llama.cpp")


def test_the_verdict_is_read_from_the_forced_tool_and_never_from_another_tools_arguments():
    forced = [{"function": {"name": VERDICT_NAME, "arguments": json.dumps(ALLOW)}}]
    assert parse_verdict(verdict_text("", forced)).allows
    other = [{"function": {"name": "delete_file", "arguments": json.dumps(ALLOW)}}]
    assert parse_verdict(verdict_text("", other)).outcome is Outcome.DENY  # fails closed


def test_a_flood_of_tool_output_cannot_push_the_users_earlier_words_out_of_the_reviewers_sight():
    """The user forbade it two turns ago; a tool result after the last user turn (always kept) fills the budget. The
    model's turns and the tool results are left out before any of the user's own words."""
    flood = Message("tool", "z" * (TRANSCRIPT_CHARS - 2_000), tool_call_id="c0",
                    provenance=Provenance.for_source("tool", "tool:web"), id="t1")
    turns = call_turns(Message("user", "Never delete anything under thesis.", id="u0"),
                       Message("assistant", "Understood. " + "w" * 3_000, provenance=Provenance("model", True), id="a0"),
                       Message("user", "Now tidy up the repository.", id="u1"),
                       Message("assistant", None, tool_calls=[{"id": "c0", "type": "function", "function": {
                           "name": "web_fetch", "arguments": "{}"}}], provenance=Provenance("model", True), id="a1"),
                       flood)
    prompt = prompt_of(turns)
    assert "Never delete anything under thesis." in prompt and "Now tidy up the repository." in prompt
    assert "Understood." not in prompt and "1 earlier turn left out" in prompt
