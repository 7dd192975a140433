"""Reasoning tokens per turn against the real llama.cpp server (text only: the tiny model takes no images)."""

from __future__ import annotations

import json
import urllib.request

import pytest

from conftest import DATA
from tui.context.untrusted.fences import FenceStyle
from tui.context.messages import messages_from_list
from tui.context.request import RequestSettings, build_request
from tui.context.templates.library import load_template
from tui.context.tokens.counting import get_tokenizer

pytestmark = pytest.mark.server

EARLIER = "The user asks for a sum. Two plus two makes four."
LATEST = "Paris weather needs the tool; call it with city Paris."
MESSAGES = [{"role": "user", "content": "2+2?"},
            {"role": "assistant", "content": "4", "reasoning_content": EARLIER},
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": "", "reasoning_content": LATEST, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "Sunny, 21 C."}]
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather of a city",
                                          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]


def post(base: str, path: str, body: dict) -> dict:
    request = urllib.request.Request(base + path, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


@pytest.fixture(scope="module")
def root(llama_server):
    return llama_server.removesuffix("/v1")


def server_starts(root: str, text: str) -> list[int]:
    """Character offsets where the server's tokens of `text` start (its pieces laid end to end; ASCII text)."""
    pieces = post(root, "/tokenize", {"content": text, "with_pieces": True, "parse_special": True})["tokens"]
    starts, position = [], 0
    for piece in pieces:
        starts.append(position)
        position += len(piece["piece"])
    assert position == len(text)
    return starts


def test_reasoning_per_turn_matches_the_servers_tokens(root):
    template = load_template(str(DATA / "templates" / "qwen3-server.jinja"))
    view = build_request(messages_from_list(MESSAGES), RequestSettings(
        template, get_tokenizer("qwen3"), tools=TOOLS, fences=FenceStyle(enabled=False)))
    body = {"messages": view.snapshot.wire, "tools": TOOLS}
    prompt = post(root, "/apply-template", body)["prompt"]
    assert prompt == view.document.text  # the server drops the same reasoning
    assert EARLIER not in prompt and LATEST in prompt

    turns = {turn.turn: turn for turn in view.hidden.turns}
    # the kept reasoning: the server's tokens of the prompt that start inside the <think> block
    starts = server_starts(root, prompt)
    low, high = prompt.index("<think>"), prompt.index("</think>") + len("</think>")
    assert turns[3].counts["reasoning"] == sum(1 for s in starts if low <= s < high) > 0
    # the dropped reasoning: what the server makes of it as text
    dropped = len(post(root, "/tokenize", {"content": EARLIER})["tokens"])
    assert turns[1].reasoning_dropped == dropped > 0 and turns[1].counts["reasoning"] == 0
    # and every token of the prompt is in one category of one turn: the server's own count
    usage = post(root, "/v1/chat/completions", {**body, "max_tokens": 1, "temperature": 0})["usage"]
    assert sum(turn.total for turn in view.hidden.turns) == view.sent_tokens == usage["prompt_tokens"]
