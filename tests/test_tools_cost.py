"""What the tools cost is the request's tokens less the same request's without them. That second count is taken from
one plain render without the tools, counted on the document's own spans (assemble.total_without_tools); it must be
what assembling the request again without tools counts, for every real template and the built-in ones."""

import pytest

from conftest import SHARED, shared_template_source
from tui.context.assemble import ServerReading, assemble, less_one_run, total_without_tools
from tui.context.document import Document, Span
from tui.context.errors import TemplateRenderError
from tui.context.templates.library import builtin_names, builtin_template, template_from_text
from tui.context.tokens.counting import SegmentCache, get_tokenizer

TOOLS = [{"type": "function", "function": {"name": "read_file", "description": "Read a file of the repository",
                                           "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                                                          "required": ["path"]}}},
         {"type": "function", "function": {"name": "run_tests", "description": "Run the test suite",
                                           "parameters": {"type": "object", "properties": {}}}}]
CONVERSATION = [
    {"role": "system", "content": "You are a coding agent."},
    {"role": "user", "content": "Why does the test fail?"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.py"}'}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "def f(x):\n    return x + 1\n"},
    {"role": "assistant", "content": "It adds one."},
    {"role": "user", "content": "Run them."},
]
SHARED_NAMES = sorted(path.stem for path in (SHARED / "data" / "templates").glob("*.jinja")) or ["absent"]


def compared(template, reading: ServerReading) -> tuple[int, int] | None:
    tokenizer, cache = get_tokenizer("o200k_base"), SegmentCache()
    try:
        full = assemble(CONVERSATION, template, tokenizer, {}, True, TOOLS, cache, reading=reading)
        again = assemble(CONVERSATION, template, tokenizer, {}, True, None, cache, reading=reading)
    except TemplateRenderError:
        return None  # a template that refuses this conversation (a family's own rules) has nothing to compare
    return total_without_tools(full, template, tokenizer, {}, True, cache, reading), again.counts.total


@pytest.mark.parametrize("reading", [ServerReading.PLAIN, ServerReading.CONTENT_SPECIALS])
@pytest.mark.parametrize("name", SHARED_NAMES)
def test_each_real_templates_count_without_tools_is_the_count_assembled_without_them(name, reading):
    template = template_from_text(shared_template_source(name), name)
    found = compared(template, reading)
    if found is not None:
        assert found[0] == found[1]


@pytest.mark.parametrize("name", builtin_names())
def test_each_built_in_templates_count_without_tools_is_the_count_assembled_without_them(name):
    found = compared(builtin_template(name), ServerReading.PLAIN)
    if found is not None:
        assert found[0] == found[1]


def test_most_real_templates_render_the_conversation_compared():
    compared_names = [name for name in SHARED_NAMES
                      if compared(template_from_text(shared_template_source(name), name), ServerReading.PLAIN)]
    assert len(compared_names) >= 35, compared_names  # (36 of 48 on 2026-12-07: the rest refuse a system turn or tools)


def test_a_control_token_the_cut_goes_through_is_read_whole_again():
    document = Document("<|tools|>T<|im_start|>user", [Span(0, 22, None, "marker"), Span(22, 26, 0, "content")],
                        ["user"])
    found = less_one_run(document, "<|im_start|>user")  # the longest common head, "<|", leaves the cut in a token
    assert found is not None and found.text == "<|im_start|>user"
    assert [(span.start, span.end, span.kind) for span in found.spans] == [(0, 12, "marker"), (12, 16, "content")]


def test_a_text_that_is_not_the_document_less_one_run_is_not_taken():
    document = Document("abcdef", [Span(0, 6, None, "marker")], [])
    assert less_one_run(document, "abXdef") is None and less_one_run(document, "abcdefg") is None


def count_pair(source: str, conversation: list[dict], tools: list[dict], reading=ServerReading.PLAIN) -> tuple[int, int]:
    template, tokenizer = template_from_text(source, "probe"), get_tokenizer("o200k_base")
    full = assemble(conversation, template, tokenizer, {}, True, tools, reading=reading)
    again = assemble(conversation, template, tokenizer, {}, True, None, reading=reading)
    return total_without_tools(full, template, tokenizer, {}, True, None, reading), again.counts.total


@pytest.mark.parametrize("reading", [ServerReading.PLAIN, ServerReading.CONTENT_SPECIALS])
def test_a_run_that_could_lie_in_two_places_across_a_control_string_is_counted_the_whole_way(reading):
    """The tools block opens the turn, and the system text starts with the block's own control string: where the run
    was cut decides whether that string is the template's (a control token) or the message's (plain text)."""
    source = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{% if loop.first and tools %}<|tools|>\n"
              "{% for t in tools %}{{ t | tojson }}\n{% endfor %}<|/tools|>\n\n{% endif %}{{ m.content }}<|im_end|>\n"
              "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    conversation = [{"role": "system", "content": "<|tools|> lists the functions you may call."},
                    {"role": "user", "content": "hi"}]
    found, expected = count_pair(source, conversation, TOOLS[1:], reading)
    assert found == expected


def test_a_control_string_in_a_tools_description_does_not_carry_into_the_count_without_tools():
    """Reka's template; a tool described as "<tool_call>" made the assistant's own <tool_call> read as the tools'
    text in the document with tools, and that reading was kept in the count without them."""
    tools = [TOOLS[0], {"type": "function", "function": {"name": "x", "description": "<tool_call>",
                                                         "parameters": {"type": "object", "properties": {}}}}]
    conversation = [{"role": "user", "content": "go"}, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.py"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "x=1"}]
    found, expected = count_pair(shared_template_source("Reka-Edge"), conversation, tools)
    assert found == expected
