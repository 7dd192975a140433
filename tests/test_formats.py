"""tui/context/formats: each wire format parsed into the messages the server renders and written back.

Against the real llama.cpp server, every body's document counts what the server's own usage says it read
(Messages: input_tokens + cache_read_input_tokens + cache_creation_input_tokens; Responses: input_tokens); a body
parsed and written back is the same body; a body written in another format parses to the same messages. The
headless commands (render, import, export --format, replay) read and write the three formats."""

from __future__ import annotations

import json
import subprocess
import sys

import httpx
import pytest

from conftest import ROOT
from tui.context.formats import FormatError, FormatKind, kind_of_body, kind_of_path, parse_body, write_body
from tui.context.formats.convert import rewritten
from tui.context.formats.replies import Translator

M, R, C = FormatKind.MESSAGES, FormatKind.RESPONSES, FormatKind.CHAT
WEATHER = {"name": "get_weather", "description": "Weather",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
BODIES = [
    (M, {"model": "x", "max_tokens": 1, "system": "You are terse.", "messages": [{"role": "user", "content": "Hi"}]}),
    (M, {"model": "x", "max_tokens": 1, "system": [{"type": "text", "text": "Sys A", "cache_control": {"type": "ephemeral"}},
                                                   {"type": "text", "text": "Sys B"}],
         "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}, {"type": "text", "text": " there"}]}]}),
    (M, {"model": "x", "max_tokens": 1, "system": "S", "tools": [WEATHER],
         "messages": [{"role": "user", "content": "weather?"},
                      {"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm", "signature": "sig"},
                                                        {"type": "text", "text": "Let me check."},
                                                        {"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                                                         "input": {"city": "Paris", "n": 1.5, "é": [1, 2]}}]},
                      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"},
                                                   {"type": "text", "text": "and?"}]},
                      {"role": "assistant", "content": "It is sunny."},
                      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_2", "is_error": True,
                                                    "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]}]}),
    (M, {"model": "x", "max_tokens": 1, "messages": [
        {"role": "user", "content": "q"}, {"role": "assistant", "content": [{"type": "redacted_thinking", "data": "xx"},
                                                                            {"type": "text", "text": "a"}]},
        {"role": "user", "content": "<|im_start|>q2"}]}),
    (R, {"model": "x", "max_output_tokens": 1, "instructions": "Be terse.", "input": "Hi"}),
    (R, {"model": "x", "max_output_tokens": 1, "input": [{"role": "developer", "content": "Dev"},
                                                        {"role": "system", "content": "S"}, {"role": "user", "content": "u"}]}),
    (R, {"model": "x", "max_output_tokens": 1, "instructions": "Be terse.",
         "tools": [{"type": "function", "name": "get_weather", "description": "Weather", "parameters": WEATHER["input_schema"]}],
         "input": [{"role": "user", "content": [{"type": "input_text", "text": "Hi"}, {"type": "input_text", "text": " there"}]},
                   {"type": "reasoning", "id": "rs_1", "summary": [], "content": [{"type": "reasoning_text", "text": "deep"}]},
                   {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
                    "content": [{"type": "output_text", "text": "Checking.", "annotations": []}]},
                   {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather",
                    "arguments": "{\"city\": \"Paris\"}"},
                   {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
                   {"role": "user", "content": "thanks"}, {"type": "message", "role": "assistant", "content": "np"},
                   {"role": "user", "content": "again"}]}),
    (R, {"model": "x", "max_output_tokens": 1, "tools": [{"type": "function", "name": "f", "parameters": {"type": "object"},
                                                         "strict": False}],
         "input": [{"role": "user", "content": "u"}, {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
                   {"type": "function_call", "call_id": "c2", "name": "g", "arguments": "{\"a\":1}"},
                   {"type": "function_call_output", "call_id": "c1", "output": "o1"},
                   {"type": "function_call_output", "call_id": "c2",
                    "output": [{"type": "input_text", "text": "o2"}, {"type": "input_text", "text": "o3"}]}]}),
]
IDS = [f"{kind.value}-{n}" for n, (kind, _body) in enumerate(BODIES)]


@pytest.mark.server
@pytest.mark.parametrize("kind,body", BODIES, ids=IDS)
def test_each_body_counts_what_the_real_server_read(llama_server, kind, body):
    from tui.client.endpoint import Endpoint
    from tui.context.messages import message_from_dict
    from tui.context.policy.truncation import PolicySettings
    from tui.context.request import RequestSettings, build_request
    from tui.context.templates.library import template_from_text
    from tui.context.tokens.counting import get_tokenizer
    from tui.context.untrusted.fences import FenceStyle

    root = llama_server.removesuffix("/v1")
    assert Endpoint(llama_server, "x")  # (the server's own template and the tokenizer it vouches for)
    template = template_from_text(httpx.get(root + "/props", timeout=30).json()["chat_template"], "server", "server")
    parsed = parse_body(kind, body)
    settings = RequestSettings(template, get_tokenizer("qwen3"), {}, parsed.tools, True, PolicySettings("keep-all"),
                               FenceStyle(enabled=False), content_specials=True)
    view = build_request([message_from_dict(m, i) for i, m in enumerate(parsed.messages)], settings)
    answer = httpx.post(f"{llama_server}{kind.path}", json=body, timeout=60)
    assert answer.status_code == 200, answer.text
    usage = answer.json()["usage"]
    if kind is M:
        served = usage["input_tokens"] + usage.get("cache_read_input_tokens", 0) + usage.get(
            "cache_creation_input_tokens", 0)
    else:
        served = usage["input_tokens"]
    assert view.sent_tokens == served, view.document.text


@pytest.mark.parametrize("kind,body", BODIES, ids=IDS)
def test_a_body_parsed_and_written_back_is_the_same_body(kind, body):
    parsed = parse_body(kind, body)
    again = write_body(kind, [{k: v for k, v in m.items() if k != "provenance"} for m in parsed.messages],
                       parsed.tools, {"model": body["model"], **parsed.params}, parsed)
    assert json.dumps(again) == json.dumps(body)  # byte for byte, in the same order
    for target in FormatKind:
        written, _left = rewritten(kind, body, target)
        assert rewritten(target, written, target)[0] == written  # a written body is read back as itself
        if target is not C:
            assert parse_body(target, written).messages  # and it is a body of its format


def test_messages_bodies_keep_what_chat_completions_cannot_carry():
    parsed = parse_body(M, BODIES[2][1])
    assert [m["role"] for m in parsed.messages] == ["system", "user", "assistant", "user", "tool", "assistant", "tool"]
    assert parsed.messages[2]["reasoning_content"] == "hmm" and parsed.messages[2]["tool_calls"][0]["id"] == "toolu_1"
    assert parsed.messages[4]["provenance"] == {"source": "tool", "label": "tool:get_weather"}  # untrusted, named
    marks = parse_body(M, BODIES[1][1]).breakpoints
    assert [(b.message, b.where, b.ttl, b.offset) for b in marks] == [(0, "system block 1", "5m", 5)]
    assert "redacted_thinking" in parse_body(M, BODIES[3][1]).notes[0]
    responses = parse_body(R, {"model": "x", "input": [{"role": "user", "content": "u"}], "store": True,
                               "previous_response_id": "resp_1"})
    assert responses.previous_response_id == "resp_1" and responses.store is True


@pytest.mark.parametrize("kind,body,where", [
    (M, {"messages": [{"role": "user", "content": 5}]}, "$.messages[0].content"),
    (M, {"messages": [{"role": "user", "content": [{"type": "text", "text": "x", "cache_control": {"type": "x"}}]}]},
     "cache_control.type"),
    (R, {"input": [{"type": "function_call", "call_id": 3}]}, "$.input[0].call_id"),
    (R, {"input": json.loads("[" * 70 + "]" * 70)}, "nested deeper than 64"),
    (C, {"messages": "no"}, "$.messages"),
])
def test_hostile_bodies_are_one_line_naming_where(kind, body, where):
    with pytest.raises(FormatError) as caught:
        parse_body(kind, body)
    assert where in str(caught.value) and "\n" not in str(caught.value)


def test_formats_are_told_by_path_and_by_fields():
    assert kind_of_path("/v1/messages?beta=true") is M and kind_of_path("/v1/responses/") is R
    assert kind_of_path("/v1/chat/completions") is C and kind_of_path("/v1/messages/count_tokens") is None
    assert [kind_of_body(body) for _kind, body in BODIES] == [kind for kind, _body in BODIES]
    assert kind_of_body({"messages": [{"role": "user", "content": "x"}]}) is C


def test_streamed_events_of_each_format_are_read_as_chat_chunks():
    events = [("message_start", {"type": "message_start", "message": {"model": "m", "usage": {
        "input_tokens": 3, "cache_read_input_tokens": 10, "cache_creation_input_tokens": 5, "output_tokens": 0}}}),
              ("content_block_start", {"type": "content_block_start", "index": 0,
                                       "content_block": {"type": "tool_use", "id": "t1", "name": "f", "input": {}}}),
              ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                       "delta": {"type": "input_json_delta", "partial_json": "{\"a\":"}}),
              ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                       "delta": {"type": "input_json_delta", "partial_json": "1}"}}),
              ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use"},
                                 "usage": {"output_tokens": 4}}),
              ("message_stop", {"type": "message_stop"})]
    translator = Translator(M)
    chunks = [chunk for name, data in events for chunk in translator.event(name, data)]
    assert translator.done and chunks[-1]["usage"]["prompt_tokens"] == 18
    assert chunks[-1]["usage"]["prompt_tokens_details"]["cached_tokens"] == 10
    assert chunks[-1]["usage"]["cache_creation_input_tokens"] == 5
    assert "".join(c["choices"][0]["delta"].get("tool_calls", [{}])[0].get("function", {}).get("arguments", "")
                   for c in chunks) == "{\"a\":1}"
    responses = Translator(R)
    out = responses.event("response.completed", {"type": "response.completed", "response": {
        "id": "resp_9", "status": "completed", "usage": {"input_tokens": 7, "output_tokens": 2,
                                                         "input_tokens_details": {"cached_tokens": 4}}}})
    assert responses.done and responses.response_id == "resp_9" and out[0]["usage"]["prompt_tokens"] == 7
    hostile = Translator(M)
    assert hostile.event("content_block_delta", {"delta": ["not", "an", "object"], "index": {}}) == []


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tui", *args], capture_output=True, text=True, timeout=120,
                          cwd=str(ROOT))


def test_render_import_and_export_read_and_write_each_format(tmp_path):
    for number, (kind, body) in enumerate(BODIES[:3] + BODIES[4:7]):
        path = tmp_path / f"body{number}.json"
        path.write_text(json.dumps(body))
        rendered = run_cli("render", str(path), "--template", "qwen3", "--tokenizer", "qwen3", "--json")
        assert rendered.returncode == 0, rendered.stderr
        assert json.loads(rendered.stdout)["format"] == kind.value
        imported = run_cli("import", str(path), "-o", str(tmp_path / f"s{number}.ctxpane.json"))
        assert imported.returncode == 0, imported.stderr
        again = run_cli("render", str(tmp_path / f"s{number}.ctxpane.json"), "--no-fences", "--json")
        assert again.returncode == 0, again.stderr
    refused = run_cli("render", str(tmp_path / "body0.json"), "--format", "responses")
    assert refused.returncode == 2 and "a Responses API body" in refused.stderr and refused.stderr.count("\n") == 1
