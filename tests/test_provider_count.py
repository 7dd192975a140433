"""`render --provider-count`: the provider's own pre-send count, beside ctxpane's, from loopback servers that
answer OpenAI's, Anthropic's and Gemini's count endpoints in their documented shapes (provider_count_servers)."""

import base64
import json

import pytest

from provider_count_servers import KEY, CountServer, anthropic, gemini, openai
from tui.client.provider_count import CountKind, count_request

PNG = base64.b64encode(bytes.fromhex("89504e470d0a1a0a0000000d49484452000000100000001008060000001ff3ff61")).decode()
CALL = {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\": \"Oslo\"}"}}
TOOL = {"type": "function", "function": {"name": "weather", "description": "Weather for a city",
                                         "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}
BODY = {"model": "count-model", "tools": [TOOL], "messages": [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": [{"type": "text", "text": "Weather in Oslo? And this picture:"},
                                 {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}]},
    {"role": "assistant", "content": "", "tool_calls": [CALL]},
    {"role": "tool", "tool_call_id": "call_1", "name": "weather", "content": "Sunny, 4 C"},
    {"role": "user", "content": "Thanks. Anything else?"}]}
CHECK = {"openai": openai, "anthropic": lambda body: anthropic(body, {"anthropic-version": "2023-06-01"}),
         "gemini": gemini}


@pytest.mark.parametrize("kind", ["openai", "anthropic", "gemini"])
def test_each_provider_is_asked_in_its_own_shape(kind):
    _path, payload = count_request(CountKind(kind), BODY)
    CHECK[kind](payload)  # the documented shape: raises if anything is off


@pytest.mark.parametrize("kind", ["openai", "anthropic", "gemini"])
def test_render_shows_the_providers_count_beside_its_own(kind, run_cli, tmp_path):
    body = tmp_path / "body.json"
    body.write_text(json.dumps(BODY))
    with CountServer(kind) as server:
        done = run_cli("render", str(body), "--json", "--provider-count", kind, "--base-url", server.url,
                       env={"OPENAI_API_KEY": KEY})
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    found = data["provider_count"]
    asked = json.loads(server.seen[-1]["body"])
    assert found["provider_tokens"] == CHECK[kind](asked)[{"gemini": "totalTokens"}.get(kind, "input_tokens")]
    assert found["local_tokens"] == data["sent_tokens"]
    assert found["difference"] == found["local_tokens"] - found["provider_tokens"] and found["problem"] == ""
    headers = {name.lower(): value for name, value in server.seen[-1]["headers"].items()}
    carried = {"openai": "authorization", "anthropic": "x-api-key", "gemini": "x-goog-api-key"}[kind]
    assert KEY in headers[carried] and [n for n, v in headers.items() if KEY in v] == [carried]  # only there
    assert "x-ctxpane-key-style" not in headers  # the marker never leaves the machine
    assert KEY not in done.stdout + done.stderr


def test_a_refused_count_is_one_line_and_the_render_goes_on(run_cli, tmp_path):
    body = tmp_path / "body.json"
    body.write_text(json.dumps(BODY))
    with CountServer("anthropic") as server:
        done = run_cli("render", str(body), "--provider-count", "anthropic", "--base-url", server.url,
                       env={"OPENAI_API_KEY": "sk-wrong-key-000000000000"})
    assert done.returncode == 0 and "You are terse." in done.stdout  # the document is still written
    line = [text for text in done.stderr.splitlines() if text.startswith("provider count")]
    assert len(line) == 1 and "none (" in line[0] and "401" in line[0] and "sk-wrong" not in done.stderr


def test_without_a_host_it_says_so_in_one_line(run_cli, tmp_path):
    body = tmp_path / "body.json"
    body.write_text(json.dumps(BODY))
    done = run_cli("render", str(body), "--provider-count", "openai", env={"OPENAI_BASE_URL": ""})
    assert done.returncode == 2 and done.stderr.strip().count("\n") == 0 and "--base-url" in done.stderr
    assert done.stdout == ""


async def test_the_app_says_the_providers_count_before_each_send(tmp_path, monkeypatch):
    """Configured (--provider-count, or provider_count in config.toml), the controller asks the same host, with
    the same key, before each send, and says both figures; the chat request goes on as before."""
    from controller_helpers import Harness
    from tui.controller.events import Notice
    from tui.sessions.model import Session

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with CountServer("openai") as server:
        made = Harness(tmp_path, base_url=server.url, provider_count="openai", model="count-model")
        made.ctl.adopt(Session(), None)
        made.ctl.load_tokenizer()
        made.ctl.connect()
        await made.idle()
        assert made.ctl.client is not None
        await made.send("How many tokens is this?")
        made.ctl.close()
    paths = [seen["path"] for seen in server.seen]
    assert paths == ["/v1/responses/input_tokens", "/v1/chat/completions"], paths  # counted, then sent
    counted = json.loads(server.seen[0]["body"])
    said = [n.text for n in made.of(Notice) if n.text.startswith("provider count (openai)")]
    assert len(said) == 1 and f": {openai(counted)['input_tokens']} · ctxpane " in said[0], said
    assert made.ctl.wb.session.messages[-1].text() == "ok"


def test_a_provider_count_in_config_that_is_not_a_provider_is_said_and_off(tmp_path):
    from tui.app.config import resolve
    config = tmp_path / "config.toml"
    config.write_text('provider_count = "everyone"\n')
    settings, problems = resolve({}, {}, config)
    assert settings.provider_count == "" and any("provider_count" in p for p in problems)


def test_odd_model_names_and_shapes_stay_on_the_counting_path():
    path, payload = count_request(CountKind.GEMINI, {"model": "../../admin?x=1#y", "messages": "not a list"})
    assert path == "/v1beta/models/..%2F..%2Fadmin%3Fx%3D1%23y:countTokens" and payload["generateContentRequest"]
    _path, odd = count_request(CountKind.ANTHROPIC, {"model": "m", "tools": 5, "messages": [
        {"role": "user", "content": "a"}, {"role": "user", "content": "b", "tool_calls": 7},
        {"role": "assistant", "content": [3, {"type": "text"}]}]})
    assert odd["messages"] == [{"role": "user", "content": [{"type": "text", "text": "a"},
                                                             {"type": "text", "text": "b"}]}]


def test_the_rewrite_keeps_what_is_counted():
    """Review findings: arguments re-dumped with escapes, Gemini's function named by its call id, tool results
    after the text of a joined user turn, a PDF sent as an image, a gateway's path prefix lost."""
    body = {"model": "m", "messages": [
        {"role": "user", "content": "Where?"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": "lookup", "arguments": "{\"city\": \"東京\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        {"role": "user", "content": [{"type": "text", "text": "and this file"},
                                     {"type": "image_url", "image_url": {"url": "data:application/pdf;base64,JVBERi0x"}}]}],
        "tools": [{"type": "function", "function": {"name": "lookup", "parameters": {
            "$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "additionalProperties": False,
            "properties": {"city": {"type": "string"}}}}}]}
    _path, openai_body = count_request(CountKind.OPENAI, body)
    call = next(item for item in openai_body["input"] if item.get("type") == "function_call")
    assert call["arguments"] == "{\"city\": \"東京\"}"  # as the model wrote it
    _path, anthropic_body = count_request(CountKind.ANTHROPIC, body)
    last = anthropic_body["messages"][-1]["content"]
    assert [b["type"] for b in last] == ["tool_result", "text", "document"]
    path, gemini_body = count_request(CountKind.GEMINI, body, "/gemini/v1beta/openai/v1")
    assert path == "/gemini/v1beta/models/m:countTokens"  # the gateway's prefix kept, the native API's folder
    request = gemini_body["generateContentRequest"]
    response = next(p for c in request["contents"] for p in c["parts"] if "functionResponse" in p)
    assert response["functionResponse"]["name"] == "lookup"
    assert [c["role"] for c in request["contents"]] == ["user", "model", "user"]  # one turn a side
    schema = request["tools"][0]["functionDeclarations"][0]["parameters"]
    assert "$schema" not in schema and "additionalProperties" not in schema and schema["properties"]
    assert count_request(CountKind.GEMINI, {"model": "tunedModels/abc"})[0] == "/v1beta/tunedModels/abc:countTokens"


def test_anthropic_version_goes_with_every_count_request(tmp_path):
    import asyncio

    from tui.client.endpoint import Endpoint
    from tui.client.http import OpenAIClient
    from tui.client.provider_count import provider_count
    with CountServer("anthropic") as server:
        async def ask():
            async with OpenAIClient(Endpoint(server.url, "m", "NO_SUCH_KEY_VAR", None, "flag")) as client:
                return await provider_count(client, CountKind.ANTHROPIC, BODY, 10)
        counted = asyncio.run(ask())
    headers = {k.lower(): v for k, v in server.seen[-1]["headers"].items()}
    assert headers.get("anthropic-version") == "2023-06-01" and "x-api-key" not in headers
    assert counted.tokens is None and "401" in counted.problem  # no key: refused, said


async def test_a_count_endpoint_that_never_answers_does_not_hold_the_send(tmp_path, monkeypatch):
    import tui.controller.sending as sending
    from controller_helpers import Harness
    from tui.controller.events import Notice
    from tui.sessions.model import Session

    monkeypatch.setattr(sending, "COUNT_WAIT", 0.3)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with CountServer("openai") as server:
        server.httpd.stall = True  # the count endpoint hangs
        made = Harness(tmp_path, base_url=server.url, provider_count="openai", model="count-model")
        made.ctl.adopt(Session(), None)
        made.ctl.load_tokenizer()
        made.ctl.connect()
        await made.idle()
        await made.send("Still sent?")
        made.ctl.close()
    assert made.ctl.wb.session.messages[-1].text() == "ok"  # sent without the count
    assert any("no answer in 0.3 s" in n.text for n in made.of(Notice))
