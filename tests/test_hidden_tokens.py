"""The hidden tokens per turn: reasoning, tool schemas, tool calls, tool results, images; reasoning the
template drops, what that does to the cache, and the providers that want reasoning sent back.

Counts are checked against the Qwen3 tokenizer read with the `tokenizers` library directly (not through
ctxpane), so no figure here is hard-coded.
"""

from __future__ import annotations

import json
import lzma

import pytest
from tokenizers import Tokenizer

from conftest import DATA, ROOT, shared_template_source
from image_bytes import png
from tui.context.cache.causes import CauseClass
from tui.context.untrusted.fences import FenceStyle
from tui.context.images.files import image_part
from tui.context.messages import Message, Provenance
from tui.context.families.reasoning_rules import matching_rules
from tui.context.request import RequestSettings, build_request
from tui.context.templates.library import builtin_template, load_template, template_from_text
from tui.context.tokens.counting import get_tokenizer

RAW = Tokenizer.from_str(lzma.decompress(
    (ROOT / "tui" / "context" / "tokens" / "tokenizer_files" / "qwen3-tokenizer.json.xz").read_bytes()).decode("utf-8"))
WEATHER = [{"type": "function", "function": {"name": "get_weather", "description": "Weather of a city",
                                             "parameters": {"type": "object",
                                                            "properties": {"city": {"type": "string"}}}}}]
FIRST_THOUGHT = "The user wants a sum. Two plus two is four, so the answer is 4."
TOOL_THOUGHT = "I need the weather tool for Paris."


def raw_count(text: str) -> int:
    return len(RAW.encode(text, add_special_tokens=False).ids)


def raw_in(document: str, start: int, end: int) -> int:
    """Tokens of the whole document, encoded by the model's tokenizer as a server does, that start in [start, end)."""
    encoding = RAW.encode(document, add_special_tokens=False)
    return sum(1 for low, _high in encoding.offsets if start <= low < end)


def model(text, **fields) -> Message:
    return Message("assistant", text, provenance=Provenance("model", True), **fields)


def conversation() -> list[Message]:
    return [Message("system", "Be brief.", provenance=Provenance("system_prompt", True), id="s"),
            Message("user", "What is 2+2?", id="u1"),
            model("4.", reasoning_content=FIRST_THOUGHT, id="a1"),
            Message("user", "And the weather in Paris?", id="u2"),
            model("", reasoning_content=TOOL_THOUGHT, id="a2", tool_calls=[
                {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]),
            Message("tool", "Sunny, 21 C.", tool_call_id="c1", provenance=Provenance("tool", True), id="t1")]


def settings(template, **extra) -> RequestSettings:
    return RequestSettings(template, get_tokenizer("qwen3"), tools=extra.pop("tools", WEATHER),
                           fences=FenceStyle(enabled=False), **extra)


def turn_of(view, message_id):
    return next(turn for turn in view.hidden.turns if turn.message_id == message_id)


def test_every_token_is_in_exactly_one_category_of_one_turn():
    view = build_request(conversation(), settings(builtin_template("qwen3")))
    assert sum(turn.total for turn in view.hidden.turns) == view.sent_tokens == view.snapshot.counts.total
    assert {turn.message_id for turn in view.hidden.turns} >= {"s", "u1", "a1", "u2", "a2", "t1"}


@pytest.mark.parametrize("source", ["builtin", "real"])
def test_qwen3_drops_earlier_reasoning_and_it_is_counted_per_turn(source):
    """Qwen3 writes <think> only for the turns after the last user query: a1's reasoning is dropped, a2's kept."""
    template = builtin_template("qwen3") if source == "builtin" else \
        template_from_text(shared_template_source("Qwen-Qwen3-0.6B"), "test", "Qwen3-0.6B")
    view = build_request(conversation(), settings(template))
    assert FIRST_THOUGHT not in view.document.text and TOOL_THOUGHT in view.document.text
    dropped, kept = turn_of(view, "a1"), turn_of(view, "a2")
    # dropped: the reasoning as the model wrote it, counted on its own
    assert dropped.reasoning_dropped == raw_count(FIRST_THOUGHT) > 0 and dropped.counts["reasoning"] == 0
    assert kept.reasoning_dropped == 0 and view.hidden.reasoning_dropped == dropped.reasoning_dropped
    # kept: the tokens of the <think> block the template wrote (tags and newlines included)
    text = view.document.text
    assert kept.counts["reasoning"] == raw_in(text, text.index("<think>"), text.index("</think>") + 8)
    [note] = [n for n in view.hidden.notes if "dropped" in n]
    assert f"dropped {dropped.reasoning_dropped} reasoning tokens of turn #2:" in note and CauseClass.REASONING in note


def test_the_dropped_reasoning_breaks_the_cache_prefix_at_that_turn():
    """Request 1 ends with the tool result (a2's reasoning written); once the user asks again, a2's
    reasoning is dropped: the document changes at turn #4 and the prefix breaks there, classed as such."""
    template = builtin_template("qwen3")
    messages = conversation()
    first = build_request(messages, settings(template))
    assert TOOL_THOUGHT in first.document.text
    messages += [model("Sunny, 21 C.", id="a3"), Message("user", "Thanks. Tomorrow?", id="u3")]
    second = build_request(messages, settings(template), previous=first.shape, request_number=2)
    assert TOOL_THOUGHT not in second.document.text
    assert turn_of(second, "a2").reasoning_dropped == raw_count(TOOL_THOUGHT)
    assert second.prefix.cause_class == CauseClass.REASONING
    assert second.origin[second.prefix.message] == 4  # session index of a2: turn #4
    assert any("turn #4:" in note for note in second.hidden.notes)


def test_tool_schemas_calls_and_results_are_counted_apart():
    view = build_request(conversation(), settings(builtin_template("qwen3")))
    text = view.document.text
    # the tools' cell: all they add, their schema (as tojson writes it) and the template's text around it
    bare = build_request(conversation(), settings(builtin_template("qwen3"), tools=None))
    assert json.dumps(WEATHER[0]) in text
    assert view.hidden.total("tool_schema") == view.sent_tokens - bare.sent_tokens
    start = text.rindex("<tool_call>")
    assert turn_of(view, "a2").counts["tool_calls"] == raw_in(text, start, text.index("</tool_call>", start) + 12)
    assert turn_of(view, "t1").counts["tool_results"] == raw_count("Sunny, 21 C.")
    assert turn_of(view, "t1").counts["text"] == 0 and turn_of(view, "u1").counts["tool_results"] == 0


def test_reasoning_in_content_think_blocks_counts_as_reasoning():
    messages = [Message("user", "Hi", id="u1"), model("<think>\nGreet back.\n</think>\n\nHello!", id="a1")]
    view = build_request(messages, settings(builtin_template("qwen3"), tools=None))
    text = view.document.text
    assert turn_of(view, "a1").counts["reasoning"] == raw_in(text, text.index("<think>"), text.index("</think>") + 8)
    assert turn_of(view, "a1").reasoning_dropped == 0


def test_a_vision_template_writes_its_placeholder_and_the_image_is_counted_beyond_it():
    part = image_part(png(1024, 768), "chart.png")
    messages = [Message("user", [{"type": "text", "text": "What is this?"}, part], id="u1")]
    template = load_template(str(DATA / "templates" / "Qwen3.5-4B.jinja"))
    view = build_request(messages, settings(template, tools=None))
    [image] = view.hidden.images
    assert image.placeholder == "<|vision_start|><|image_pad|><|vision_end|>"  # exactly as the template writes it
    assert image.placeholder in view.document.text and "base64" not in view.document.text
    # Qwen3.5 is counted as Qwen3-VL: 1024x768 in 32-pixel patches: 32 x 24 = 768, + 2 markers = 770
    assert view.hidden.family == "qwen3-vl" and image.estimate.tokens == 770
    assert image.placeholder_tokens == 3  # three control tokens of the Qwen3 vocabulary
    assert view.image_tokens == 770 - 3 and view.sent_tokens == view.snapshot.counts.total + 767
    assert turn_of(view, "u1").counts["images"] == 770
    assert turn_of(view, "u1").counts["text"] == raw_count("What is this?")
    # the model asked for picks the family: OpenAI tiles for the same image: 85 + 170 x 4 = 765
    openai = build_request(messages, settings(template, tools=None, model="gpt-4o"))
    assert openai.hidden.images[0].estimate.tokens == 765 and openai.hidden.family == "openai"


@pytest.mark.parametrize("model_name,base_url,messages,expected", [
    # Anthropic: thinking must go back with tool use; a conversation without tools gets no note
    ("claude-sonnet-4-5", "", "tools", ["anthropic-thinking"]),
    ("claude-sonnet-4-5", "", "plain", []),
    ("some-alias", "https://api.anthropic.com/v1", "tools", ["anthropic-thinking"]),
    # DeepSeek reasoner refuses reasoning_content in input: a note when a turn carries it
    ("deepseek-reasoner", "", "reasoning", ["deepseek-reasoner"]),
    ("deepseek-reasoner", "", "plain", []),
    ("deepseek-chat", "https://api.deepseek.com", "reasoning", ["deepseek-reasoner"]),
    # OpenAI reasoning models: always (their reasoning is hidden); gpt-4o is not one
    ("o3-mini", "", "plain", ["openai-reasoning"]), ("gpt-5", "", "plain", ["openai-reasoning"]),
    ("gpt-4o", "https://api.openai.com/v1", "plain", []),
    # a local model on llama.cpp: nothing
    ("qwen3-0.6b", "http://127.0.0.1:8080/v1", "tools", []),
])
def test_provider_reasoning_rules(model_name, base_url, messages, expected):
    held = {"plain": [Message("user", "hi"), model("hello")],
            "reasoning": [Message("user", "hi"), model("hello", reasoning_content="think")],
            "tools": conversation()}[messages]
    assert [rule.name for rule in matching_rules(model_name, base_url, held)] == expected


def test_the_provider_note_shows_in_the_request():
    view = build_request(conversation(), settings(builtin_template("qwen3"), model="deepseek-reasoner"))
    assert any(note.startswith("DeepSeek reasoner") for note in view.hidden.notes)


def test_render_json_carries_the_per_turn_figures(cli_in_process, tmp_path):
    path = tmp_path / "conv.json"
    path.write_text(json.dumps([m.to_wire() for m in conversation()]), encoding="utf-8")
    result = cli_in_process("render", str(path), "--template", "qwen3", "--tokenizer", "qwen3", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    hidden = data["hidden_tokens"]
    turns = {turn["turn"]: turn for turn in hidden["turns"]}
    assert turns[2]["reasoning_dropped"] == raw_count(FIRST_THOUGHT) and turns[2]["reasoning"] == 0
    assert turns[4]["reasoning"] > 0 and turns[4]["tool_calls"] > 0 and turns[5]["tool_results"] > 0
    assert sum(turn["total"] for turn in hidden["turns"]) == data["sent_tokens"]
    assert hidden["reasoning_dropped"] == raw_count(FIRST_THOUGHT) and hidden["images_label"] == "estimate"


def test_schemas_are_found_in_order_and_a_template_that_writes_them_otherwise_falls_back():
    from tui.context.hidden_tokens import tool_regions
    text = 'x\n{"type": "function", "function": {"name": "a"}}\n{"type": "function", "function": {"name": "a"}}\n'
    tools = [{"type": "function", "function": {"name": "a"}}] * 2
    assert tool_regions(text, tools) == [(2, 49), (50, 97)]  # each 47 characters, one after the other
    assert tool_regions("name: a", tools) == []  # written some other way: no region, the marked strings count
    # a template that writes only the function object, compact: found in that form
    assert tool_regions('{"name":"a"}', tools[:1]) == [(0, 12)]
