"""The request shapes real agents send, each counted against the real llama.cpp server (../shared/server): the one
normalisation (tui/context/llama_wire.py, docs/normalisation.md) in `ctxpane render`, the tap and the app's import.

Each case is a shape llama.cpp reads alike in another form: `content: null` beside tool calls (the OpenAI Agents
SDK, LangChain), `strict` on tools (the Agents SDK always), compact arguments (JavaScript clients), tools without a
description, text parts, and a Responses tool of a kind the server skips (Codex's web_search)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from tap_helpers import RunningTap

pytestmark = pytest.mark.server

QUESTION = {"role": "user", "content": "What is the weather in Paris and in Zürich?"}
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Weather of a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}


FIRST, SECOND = "call00001", "call00002"  # nine letters and digits, as Mistral's templates require of an id


def call(arguments: str, ident: str = FIRST) -> dict:
    return {"id": ident, "type": "function", "function": {"name": "get_weather", "arguments": arguments}}


def answered(ident: str, text: str) -> dict:
    return {"role": "tool", "tool_call_id": ident, "content": text}


def strict(name: str) -> dict:
    function = {**WEATHER["function"], "name": name, "strict": True}
    function["parameters"] = {**function["parameters"], "additionalProperties": False}
    return {"type": "function", "function": function}


def undescribed(name: str) -> dict:
    return {"type": "function", "function": {"name": name, "parameters": WEATHER["function"]["parameters"]}}


def parts(*texts: str) -> list[dict]:
    return [{"type": "text", "text": text} for text in texts]


CASES = {
    "content null beside tool calls": {"messages": [
        QUESTION, {"role": "assistant", "content": None, "tool_calls": [call('{"city": "Paris"}')]},
        answered(FIRST, "sunny")], "tools": [WEATHER]},
    "content absent beside tool calls": {"messages": [
        QUESTION, {"role": "assistant", "tool_calls": [call('{"city": "Paris"}')]}, answered(FIRST, "sunny")],
        "tools": [WEATHER]},
    "strict tools": {"messages": [QUESTION], "tools": [strict("get_weather"), strict("get_time")]},
    "compact arguments": {"messages": [
        QUESTION, {"role": "assistant", "content": "", "tool_calls": [
            call('{"city":"Paris"}'), call('{"city":"Zürich","days":[1,2.0,1e5],"note":"\\u00e9\\/"}', SECOND)]},
        answered(FIRST, "sunny"), answered(SECOND, "rain")], "tools": [WEATHER]},
    "tools without a description": {"messages": [QUESTION],
                                    "tools": [undescribed("get_weather"), undescribed("get_time")]},
    "text parts": {"messages": [
        {"role": "system", "content": parts("You are terse.", "Answer in French.")},
        {"role": "user", "content": parts("Hello there,", "what is new?")},
        {"role": "assistant", "content": parts("Nothing much.")},
        {"role": "user", "content": parts("Tell me", "", "more.")}]},
}


def served(llama_server: str, body: dict, path: str = "/chat/completions") -> int:
    """The prompt tokens the server counted for `body` (one token of reply)."""
    limit = {"max_output_tokens": 1} if path == "/responses" else {"max_tokens": 1}
    answer = httpx.post(llama_server + path, json={"model": "tiny-qwen3", **body, **limit, "temperature": 0},
                        timeout=60)
    assert answer.status_code == 200, answer.text
    usage = answer.json()["usage"]
    return usage["input_tokens"] if path == "/responses" else usage["prompt_tokens"]


def applied(llama_server: str, body: dict) -> str:
    """The document the server renders for `body` (its /apply-template)."""
    answer = httpx.post(llama_server.removesuffix("/v1") + "/apply-template", json=body, timeout=60)
    assert answer.status_code == 200, answer.text
    return answer.json()["prompt"]


@pytest.fixture(scope="module")
def server_template(llama_server, tmp_path_factory) -> Path:
    """The server's own chat template (its /props), as a file `render --template` reads."""
    props = httpx.get(llama_server.removesuffix("/v1") + "/props", timeout=30).json()
    path = tmp_path_factory.mktemp("server-template") / "server.jinja"
    path.write_text(props["chat_template"], encoding="utf-8")
    return path


def rendered(cli_in_process, path: Path, *options: str) -> dict:
    result = cli_in_process("render", str(path), "--tokenizer", "qwen3", "--json", "--no-fences", *options)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize("case", CASES)
def test_render_gives_the_servers_document_and_count(case, llama_server, server_template, tmp_path, cli_in_process):
    body = CASES[case]
    path = tmp_path / "body.json"
    path.write_text(json.dumps({"model": "tiny-qwen3", **body}), encoding="utf-8")
    count, document = served(llama_server, body), applied(llama_server, body)
    ours = rendered(cli_in_process, path, "--template", str(server_template))
    assert ours["text"] == document
    assert ours["tokens"]["total"] == count
    # the model family's built-in (what the tap and the app use when the server shows no template)
    assert rendered(cli_in_process, path, "--template", "qwen3")["tokens"]["total"] == count


RESPONSES = {"instructions": "You are a coding agent.", "input": [
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "List the files please."}]},
    {"type": "function_call", "call_id": "c1", "name": "shell", "arguments": '{"cmd":["ls"]}'},
    {"type": "function_call_output", "call_id": "c1", "output": "a.txt\nb.txt"},
    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "There are two files."}]},
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Thanks"}]}],
    "tools": [{"type": "function", "name": "shell", "description": "Run a shell command", "strict": False,
               "parameters": {"type": "object", "properties": {"cmd": {"type": "array", "items": {"type": "string"}}},
                              "required": ["cmd"]}},
              {"type": "web_search"}]}


def test_a_tool_the_server_skips_is_said_to_be_lost_and_the_count_is_the_servers(llama_server, server_template,
                                                                                  tmp_path, cli_in_process):
    count = served(llama_server, RESPONSES, "/responses")  # answered 200: web_search is left out, not refused
    without = served(llama_server, {**RESPONSES, "tools": RESPONSES["tools"][:1]}, "/responses")
    assert count == without
    path = tmp_path / "responses.json"
    path.write_text(json.dumps({"model": "tiny-qwen3", **RESPONSES}), encoding="utf-8")
    result = cli_in_process("render", str(path), "--template", str(server_template), "--tokenizer", "qwen3",
                            "--no-fences")
    assert result.returncode == 0, result.stderr
    note = next(line for line in result.stderr.splitlines() if "web_search" in line)
    assert "silently lost" in note and "refuses" not in note
    assert rendered(cli_in_process, path, "--template", str(server_template))["tokens"]["total"] == count


CLAUDE_CODE_SHAPE = {"system": "You are an agent.", "messages": [
    {"role": "user", "content": "hello there"}, {"role": "assistant", "content": "hi"},
    {"role": "system", "content": [{"type": "text", "text": "<env>cwd /work</env>"}]},  # its environment, as a turn
    {"role": "user", "content": [{"type": "text", "text": "next"}]}]}


def test_a_system_turn_among_messages_api_messages_is_rendered_as_the_server_takes_it(
        llama_server, server_template, tmp_path, cli_in_process):
    """Claude Code sends a system turn inside `messages`: llama.cpp answers 200 and renders it as a system turn;
    the format's reader refused the body, so the tap recorded none of its requests."""
    answer = httpx.post(llama_server + "/messages", json={"model": "tiny-qwen3", **CLAUDE_CODE_SHAPE,
                                                          "max_tokens": 1, "temperature": 0}, timeout=60)
    assert answer.status_code == 200, answer.text
    count = answer.json()["usage"]["input_tokens"] + answer.json()["usage"].get("cache_read_input_tokens", 0)
    path = tmp_path / "messages.json"
    path.write_text(json.dumps({"model": "tiny-qwen3", **CLAUDE_CODE_SHAPE}), encoding="utf-8")
    ours = rendered(cli_in_process, path, "--format", "messages", "--template", str(server_template))
    assert "<|im_start|>system\n<env>cwd /work</env><|im_end|>" in ours["text"]
    assert ours["tokens"]["total"] == count


def test_an_imported_responses_body_renders_its_turns_with_the_servers_count(llama_server, tmp_path, cli_in_process):
    body = tmp_path / "responses.json"
    body.write_text(json.dumps({"model": "tiny-qwen3", **RESPONSES}), encoding="utf-8")
    session = tmp_path / "imported.ctxpane.json"
    result = cli_in_process("import", str(body), "--format", "responses", "-o", str(session))
    assert result.returncode == 0, result.stderr
    ours = rendered(cli_in_process, session)  # with the session's own template: the model's family's built-in
    assert "List the files please." in ours["text"] and "There are two files." in ours["text"]
    assert ours["tokens"]["total"] == served(llama_server, RESPONSES, "/responses")


def test_the_tap_records_each_shape_with_the_servers_count(llama_server, tmp_path):
    """Through the tap, one request of each shape, a tool loop of an OpenAI-SDK agent (content null) with a request
    after it, and a Responses request with a web_search tool: every one is recorded, counted as the server counted
    it, and no drop is claimed."""
    loop = [QUESTION, {"role": "assistant", "content": None, "tool_calls": [call('{"city": "Paris"}')]},
            answered(FIRST, "sunny")]
    bodies = [*CASES.values(), {"messages": loop[:1], "tools": [strict("get_weather")]},
              {"messages": loop, "tools": [strict("get_weather")]},
              {"messages": [*loop, {"role": "assistant", "content": "Sunny."}, {"role": "user", "content": "Thanks"}],
               "tools": [strict("get_weather")]}]
    tap = RunningTap(llama_server, tmp_path)
    try:
        counts = [served(tap.url, body) for body in bodies] + [served(tap.url, RESPONSES, "/responses")]
        tap.settle()
        records = [tap.recorder.tapped[number] for number in sorted(tap.recorder.tapped)]
    finally:
        tap.stop()
    assert len(records) == len(bodies) + 1
    for tapped, count in zip(records, counts):
        assert not tapped.problem, tapped.problem
        record = tapped.record
        assert record.document_tokens == count == record.usage["prompt_tokens"]
        assert record.tokens_exact and record.received["verdict"] == "match", record.received
    said = " ".join(records[-1].view.hidden.notes)  # the Responses request: its web_search tool is said lost
    assert "web_search" in said and "silently lost" in said


async def test_the_app_opens_an_imported_tool_loop_with_the_servers_count_and_sends_after_it(
        llama_server, tmp_path, monkeypatch):
    """An OpenAI-SDK agent's body (content null beside tool calls, strict tools, compact arguments) imported and
    opened in the app connected to the server: the pane shows the server's count, exact, and the next message is
    sent, answered and recorded with the count the server reported."""
    from controller_helpers import connected
    from tui.sessions.store import save_session
    from tui.sessions.transfer import import_file

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    body = {"model": "tiny-qwen3", "messages": [
        QUESTION, {"role": "assistant", "content": None, "tool_calls": [call('{"city":"Paris"}')]},
        answered(FIRST, "sunny")], "tools": [strict("get_weather")]}
    path = tmp_path / "agent.json"
    path.write_text(json.dumps(body), encoding="utf-8")
    session = tmp_path / "agent.ctxpane.json"
    imported = import_file(path, path.read_bytes()).session
    imported.fences = False  # the body as it came (the app would fence the tool result: another request)
    save_session(imported, session)
    made = await connected(tmp_path, llama_server, tokenizer="")  # the server's own tokenizer, as the app learns it
    try:
        made.ctl.open_file(session)
        await made.idle()
        view = made.ctl.wb.view
        assert view is not None and view.sent_tokens == served(llama_server, body)
        assert view.snapshot.counts.exact
        await made.send("And in Zürich?")
        record = made.ctl.wb.session.requests[-1]
    finally:
        made.ctl.close()
    # answered (llama.cpp refuses logprobs beside tools in a stream: the app asks none then) and counted alike
    assert record.received is not None, [event for event in made.events if "✗" in str(event)]
    assert record.document_tokens == record.received["received"] and record.received["verdict"] == "match"


# Real templates that read text parts (GLM-4.6, Mistral Small 3.2) or take arguments only as text (DeepSeek-R1's
# distill): the server hands them parts, or the client's text, and so does ctxpane (templates/capabilities.py).
OTHER_TEMPLATES = ["GLM-4.6", "Mistral-Small-3.2-24B-Instruct-2506", "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B",
                   "Qwen3.5-4B"]


@pytest.mark.parametrize("name", OTHER_TEMPLATES)
def test_other_real_templates_get_what_the_server_hands_them(name, tmp_path, cli_in_process):
    from conftest import SHARED, need_shared, started_llama

    template = SHARED / "data" / "templates" / f"{name}.jinja"
    if not template.exists():
        need_shared(f"the real template {name} is needed")
    with started_llama(LLAMA_SERVER_ARGS=f"--chat-template-file {template}") as url:
        props = httpx.get(url.removesuffix("/v1") + "/props", timeout=30).json()
        tokens = ["--var", f"bos_token={props['bos_token']}", "--var", f"eos_token={props['eos_token']}"]  # the model's
        for case in ("text parts", "compact arguments"):
            path = tmp_path / "body.json"
            path.write_text(json.dumps({"model": "tiny-qwen3", **CASES[case]}), encoding="utf-8")
            ours = rendered(cli_in_process, path, "--template", str(template), *tokens)
            assert ours["text"] == applied(url, CASES[case]), case
