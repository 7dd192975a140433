"""The engine against the real llama.cpp server: same document, same token count."""

import json
import urllib.request

import pytest

from conftest import DATA
from server_conversations import CONVERSATIONS
from tui.context.assemble import assemble
from tui.context import get_tokenizer, load_template

pytestmark = pytest.mark.server


def post(base, path, body):
    request = urllib.request.Request(base + path, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


@pytest.fixture(scope="module")
def root(llama_server):
    return llama_server.removesuffix("/v1")


@pytest.mark.parametrize("name", list(CONVERSATIONS))
def test_document_and_tokens_match_server(root, run_cli, tmp_path, name):
    messages, tools = CONVERSATIONS[name]
    body = {"messages": messages, **({"tools": tools} if tools else {})}
    server_prompt = post(root, "/apply-template", body)["prompt"]
    server_tokens = len(post(root, "/tokenize", {"content": server_prompt})["tokens"])

    path = tmp_path / "body.json"
    path.write_text(json.dumps(body))
    result = run_cli("render", str(path), "--template", str(DATA / "templates" / "qwen3-server.jinja"),
                     "--tokenizer", "qwen3", "--no-fences", "--json")
    assert result.returncode == 0, result.stderr
    ours = json.loads(result.stdout)
    assert ours["text"] == server_prompt
    assert ours["tokens"]["total"] == server_tokens

    usage = post(root, "/v1/chat/completions", {**body, "max_tokens": 1, "temperature": 0})["usage"]
    assert usage["prompt_tokens"] == ours["tokens"]["total"]


def test_engine_in_process_matches_server_count(root):
    template = load_template(str(DATA / "templates" / "qwen3-server.jinja"))
    messages, tools = CONVERSATIONS["tool_roundtrip"]
    snap = assemble(messages, template, get_tokenizer("qwen3"), tools=tools)
    usage = post(root, "/v1/chat/completions", {"messages": messages, "tools": tools, "max_tokens": 1})["usage"]
    assert snap.counts.total == usage["prompt_tokens"]


def test_fenced_request_counts_match_server(root):
    """With fences on, the wire messages ctxpane sends produce the document and count the engine shows."""
    from tui.context import messages_from_list
    from tui.context.request import RequestSettings, build_request

    template = load_template(str(DATA / "templates" / "qwen3-server.jinja"))
    messages, tools = CONVERSATIONS["tool_roundtrip"]
    view = build_request(messages_from_list(messages), RequestSettings(template, get_tokenizer("qwen3"), tools=tools))
    assert view.fences and "<untrusted" in view.snapshot.wire[2]["content"]
    body = {"messages": view.snapshot.wire, "tools": tools}
    assert post(root, "/apply-template", body)["prompt"] == view.document.text
    usage = post(root, "/v1/chat/completions", {**body, "max_tokens": 1})["usage"]
    assert usage["prompt_tokens"] == view.sent_tokens
