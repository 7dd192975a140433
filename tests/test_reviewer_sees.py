"""What the isolated reviewer is shown and how it is asked: every turn it sees is whole (a long user turn's last
words reach it), the oldest turns are left out first and said, the last user turns never; the tool's definition
and the exact command line are in its prompt, fenced; the verdict's schema rides where each API takes it, and the
verdict is read back from there; a reviewer model set apart is the one asked and named."""

from __future__ import annotations

import json
import sys


from controller_helpers import connected
from tool_call_server import ALLOW, ToolCallServer
from tui.context.messages import Message, Provenance
from tui.context.templates.library import plain_chatml
from tui.context.tools.calls import pending_calls
from tui.context.tools.review import (TRANSCRIPT_CHARS, VERDICT_NAME, VERDICT_SCHEMA, Outcome, parse_verdict,
                                      review_prompt, review_request, reviewer_api, verdict_text)
from tui.controller.tool_calls import ReviewState
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
    assert "Transcript (14 turns, the oldest 12 left out" in prompt
    fits = prompt_of(call_turns(*old, Message("user", "delete thesis now", id="u9")))
    kept = [n for n in range(12) if f"old turn {n} " in fits]
    assert kept and kept == list(range(kept[0], 12)) and kept[0] > 0  # the newest kept, the oldest dropped
    assert f"the oldest {kept[0]} left out" in fits


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


async def test_a_reviewer_model_set_apart_is_the_one_asked_and_named(tmp_path):
    with ToolCallServer(ALLOW) as server:
        made = await connected(tmp_path, server.url, review_model="judge-model")
        ctl = made.ctl
        ctl.tool_calls.use(tools_from_value([{"function": {"name": "delete_file"}, "risky": True,
                                              "command": [sys.executable, "-c", "print('gone')"]}]))
        await made.send("Please delete notes/old.txt")
        await made.idle()
        waiting = ctl.tool_calls.pending()[0]
        review = ctl.tool_calls.review_of(waiting)
        assert review.state is ReviewState.DONE and review.allows
        sent = next(body for body in server.requests if "response_format" in body)
        assert sent["model"] == "judge-model" and server.requests[0]["model"] != "judge-model"
        assert review.reviewer == "judge-model" and ctl.tool_calls.facts(waiting).reviewer == "judge-model"
        ctl.close()


async def test_a_reviewer_endpoint_set_apart_gets_the_review_and_the_chat_does_not(tmp_path):
    with ToolCallServer(ALLOW) as chat, ToolCallServer(ALLOW) as judge:
        made = await connected(tmp_path, chat.url, review_base_url=judge.url, review_model="judge-model")
        ctl = made.ctl
        ctl.tool_calls.use(tools_from_value([{"function": {"name": "delete_file"}, "risky": True,
                                              "command": [sys.executable, "-c", "print('gone')"]}]))
        await made.send("Please delete notes/old.txt")
        await made.idle()
        review = ctl.tool_calls.review_of(ctl.tool_calls.pending()[0])
        assert review.allows and review.reviewer == "judge-model"
        assert not any("response_format" in body for body in chat.requests)
        assert [body["model"] for body in judge.requests] == ["judge-model"]
        ctl.close()
