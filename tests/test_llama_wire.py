"""The one normalisation (tui/context/llama_wire.py): a request brought into the shape llama.cpp's server hands its
template, before any rendering. The rules, and what a rendering shows with them, without a server (each rule's count
against the real server is tests/test_normalisation_server.py's)."""

from __future__ import annotations

import json

import pytest

from tui.context.assemble import assemble
from tui.context.llama_wire import Reading, Shape, server_arguments, server_messages, server_tools, shape_for
from tui.context.messages import Message
from tui.context.request import RequestSettings, build_request
from tui.context.templates.hf_render import hf_tojson
from tui.context.templates.library import builtin_template, template_from_text
from tui.context.tokens.counting import get_tokenizer
from tui.context.untrusted.fences import FenceStyle

pytestmark = pytest.mark.unit

CALL = {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}
# A template that reads every message's content as text, as Qwen3's does (`message.content.startswith(...)`)
READS_CONTENT = ("{% for m in messages %}<{{ m.role }}>{{ m.content.strip() }}"
                 "{% for c in m.tool_calls or [] %}[{{ c.function.arguments | tojson }}]{% endfor %}{% endfor %}")


def tool(**function) -> dict:
    return {"type": "function", "function": {"name": "get_weather", **function}}


@pytest.mark.parametrize("assistant", [{"role": "assistant", "content": None, "tool_calls": [CALL]},
                                       {"role": "assistant", "tool_calls": [CALL]}], ids=["null", "absent"])
def test_content_null_or_absent_is_empty_text(assistant):
    rendered = assemble([{"role": "user", "content": "Weather?"}, assistant], template_from_text(READS_CONTENT, "t"),
                        get_tokenizer("qwen3"))
    assert rendered.document.text == '<user>Weather?<assistant>[{"city": "Paris"}]'
    assert rendered.wire[1] == assistant  # what is sent stays as the client wrote it
    assert server_messages([assistant])[0]["content"] == ""


@pytest.mark.parametrize("texts, joined", [(["A", "B"], "A\nB"), (["A", "", "B"], "A\n\nB"), (["", "C"], "C"),
                                           ([], "")])
def test_text_parts_are_joined_by_a_newline_once_there_is_text(texts, joined):
    (shaped,) = server_messages([{"role": "user", "content": [{"type": "text", "text": t} for t in texts]}])
    assert shaped["content"] == joined


def test_parts_holding_an_image_are_left_to_the_renderer():
    parts = [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,"}}]
    assert server_messages([{"role": "user", "content": parts}])[0]["content"] == parts


def test_a_continued_last_turn_joins_its_parts_by_a_blank_line():
    turn = {"role": "assistant", "content": [{"type": "text", "text": "A"}, {"type": "text", "text": "B"}]}
    assert server_messages([{"role": "user", "content": "q"}, turn], continued=True)[1]["content"] == "A\n\nB"
    assert server_messages([{"role": "user", "content": "q"}, turn])[1]["content"] == "A\nB"


def test_roles_fields_and_calls_are_the_servers():
    message = {"role": "developer", "content": "d", "refusal": None, "annotations": [], "id": "m1",
               "reasoning_content": "", "tool_call_id": None}
    assert server_messages([message]) == [{"role": "system", "content": "d"}]
    assistant = {"role": "assistant", "content": "x", "name": "bot", "reasoning_content": "r", "function_call": None,
                 "tool_calls": [{"index": 0, "id": "c1", "type": "function",
                                 "function": {"arguments": "{}", "name": "f", "extra": 1}}]}
    (shaped,) = server_messages([assistant])
    assert list(shaped) == ["role", "content", "reasoning_content", "name", "tool_calls"]
    assert shaped["tool_calls"] == [{"type": "function", "function": {"name": "f", "arguments": {}}, "id": "c1"}]
    assert list(shaped["tool_calls"][0]) == ["type", "function", "id"]


@pytest.mark.parametrize("given, written", [
    ('{"city":"Paris"}', '{"city": "Paris"}'),  # compact, as JavaScript clients write it
    ('{"b":1,"a":[1,2.0,1e5,1.5e-7]}', '{"b": 1, "a": [1, 2.0, 100000.0, 1.5e-07]}'),  # keys in their order
    ('{"u":"\\u00e9\\ud83d\\ude00\\/"}', '{"u": "é😀/"}'),  # unicode written as itself, "/" unescaped
    ('{"c":"\\u0001\\t"}', '{"c": "\\u0001\\t"}'),  # control characters escaped
    ('{"i":9223372036854775807,"j":9223372036854775808}', '{"i": 9223372036854775807, "j": -9223372036854775808}'),
    ('{"k":-9223372036854775809,"big":99999999999999999999999}', '{"k": -9.223372036854776e+18, "big": 1e+23}'),
    ('{"u64":12345678901234567890}', '{"u64": -6101065172474983726}'),
])
def test_arguments_are_parsed_and_written_again_as_the_server_writes_them(given, written):
    """Each `written` is what the real server's template wrote (b11669: tojson of the arguments it parsed)."""
    assert hf_tojson(server_arguments(given)) == written


@pytest.mark.parametrize("given", ["not json", "", '{"x": NaN}'])
def test_arguments_that_are_not_json_stay_text(given):
    assert server_arguments(given) == given  # the server refuses such a call: nothing to reshape


def test_arguments_given_as_an_object_are_held_as_the_server_holds_them():
    assert server_arguments({"b": 1, "a": 2 ** 63}) == {"b": 1, "a": -(2 ** 63)}


def test_tools_keep_name_description_and_parameters_only():
    given = [tool(strict=True, description="Weather", parameters={"type": "object"}, extra=1),
             {**tool(description="x"), "cache_control": {"type": "ephemeral"}}, tool()]
    assert server_tools(given) == [
        {"type": "function", "function": {"name": "get_weather", "description": "Weather",
                                          "parameters": {"type": "object"}}},
        {"type": "function", "function": {"name": "get_weather", "description": "x", "parameters": {}}},
        {"type": "function", "function": {"name": "get_weather", "description": "", "parameters": {}}}]
    other = {"type": "web_search"}
    assert server_tools([other]) == [other]  # chat completions: the server refuses it; nothing to reshape


def test_a_hosted_accounting_template_reads_the_request_as_sent():
    openai = builtin_template("openai")
    assert shape_for(openai) is Shape.AS_SENT and shape_for(builtin_template("qwen3")) is Shape.LLAMA_CPP
    given = [{"role": "assistant", "content": None, "tool_calls": [CALL]}]
    assert server_messages(given, Reading(Shape.AS_SENT)) == given
    assert server_tools([tool(strict=True)], Shape.AS_SENT) == [tool(strict=True)]
    rendered = assemble([{"role": "user", "content": "q"}, *given], openai, get_tokenizer("o200k_base"))
    assert 'get_weather{"city":"Paris"}' in rendered.document.text  # the arguments as the client wrote them


def view(template: str, messages: list[dict], tools: list | None = None):
    settings = RequestSettings(builtin_template(template), get_tokenizer("qwen3"), tools=tools,
                               fences=FenceStyle(enabled=False))
    return build_request([Message(**m) for m in messages], settings)


@pytest.mark.parametrize("template", ["qwen3", "llama3", "chatml"])
def test_the_built_in_templates_show_text_parts(template):
    parts = [{"type": "text", "text": "Hello there,"}, {"type": "text", "text": "what is new?"}]
    shown = view(template, [{"role": "user", "content": parts}])
    assert "Hello there,\nwhat is new?" in shown.document.text
    assert shown.snapshot.wire[0]["content"] == parts  # sent as parts


def test_strict_and_a_missing_description_are_rendered_as_the_server_has_them():
    tools = [tool(strict=True, parameters={"type": "object", "properties": {}}), tool()]
    text = view("qwen3", [{"role": "user", "content": "q"}], tools).document.text
    written = [json.loads(line) for line in text.splitlines() if line.startswith('{"type": "function"')]
    assert written == [{"type": "function", "function": {"name": "get_weather", "description": "",
                                                         "parameters": {"type": "object", "properties": {}}}},
                       {"type": "function", "function": {"name": "get_weather", "description": "",
                                                         "parameters": {}}}]


def test_the_tools_cost_is_found_where_the_template_wrote_them():
    """The pane's tool cell reads the tools as the template wrote them (no strict): all they add, nothing else."""
    messages = [{"role": "user", "content": "q"}]
    shown = view("qwen3", messages, [tool(strict=True, description="Weather of a city")])
    bare = view("qwen3", messages)
    assert shown.hidden.total("tool_schema") == shown.snapshot.counts.total - bare.snapshot.counts.total > 0


# What the template can read decides two rules, as the server decides them (templates/capabilities.py)
READS_PARTS = ("{% for m in messages %}{% if m.content is string %}{{ m.content }}{% else %}"
               "{% for p in m.content %}{{ p.text }}{% endfor %}{% endif %}{% endfor %}")
PRINTS_CONTENT = "{% for m in messages %}{{ m.content }}{% endfor %}"
ARGUMENTS_AS_TEXT = ("{% for m in messages %}{{ m.content }}{% for c in m.tool_calls or [] %}"
                     "{{ '<call>' + c.function.arguments + '</call>' }}{% endfor %}{% endfor %}")


@pytest.mark.parametrize("source, typed, objects", [(READS_PARTS, True, False), (PRINTS_CONTENT, False, False),
                                                    (ARGUMENTS_AS_TEXT, False, False), (READS_CONTENT, False, True)])
def test_what_a_template_reads_is_found_by_rendering_probes(source, typed, objects):
    from tui.context.templates.capabilities import capabilities

    found = capabilities(template_from_text(source, "t"))
    assert (found.typed_content, found.object_arguments) == (typed, objects)


def test_a_template_that_reads_parts_is_handed_the_parts():
    """llama.cpp hands parts to such a template (GLM-4.6, Qwen3.5, Gemma 4...): its own way of joining them counts."""
    parts = [{"type": "text", "text": "A", "cache_control": {"type": "ephemeral"}}, {"type": "text", "text": "B"}]
    assert server_messages([{"role": "user", "content": parts}], Reading(typed_content=True))[0]["content"] == [
        {"type": "text", "text": "A"}, {"type": "text", "text": "B"}]
    rendered = assemble([{"role": "user", "content": parts}], template_from_text(READS_PARTS, "t"),
                        get_tokenizer("qwen3"))
    assert rendered.document.text == "AB"


def test_a_template_that_takes_arguments_as_text_is_handed_the_text():
    """llama.cpp hands the client's own text to such a template (DeepSeek-R1's distills, V3.1, Phi-3.5...)."""
    messages = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "", "tool_calls": [CALL]}]
    rendered = assemble(messages, template_from_text(ARGUMENTS_AS_TEXT, "t"), get_tokenizer("qwen3"))
    assert rendered.document.text == 'q<call>{"city":"Paris"}</call>'


def test_every_rule_is_a_row_of_the_docs_table():
    from pathlib import Path

    from tui.context.llama_wire import Rule

    table = (Path(__file__).resolve().parent.parent / "docs" / "normalisation.md").read_text(encoding="utf-8")
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    assert sorted(rule.name for rule in Rule) == sorted(row.split("`")[1] for row in rows if row.split("`")[1].isupper())


def test_arguments_written_again_are_the_calls_text_whole():
    """Arguments handed on as an object are written by the template's tojson: their keys and punctuation are the
    call's text (kind tool_call), not the template's own, as when the client's text was written as it came."""
    messages = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "", "tool_calls": [CALL]}]
    shown = view("qwen3", messages)
    calls = [shown.document.span_text(span) for span in shown.document.spans if span.kind == "tool_call"]
    assert calls == ['{"city": "Paris"}']


def test_arguments_are_claimed_whole_when_the_template_writes_the_messages_in_reverse():
    """Claimed from the last region in the text to the first, not by message number: a template that writes a later
    message first still has each call's arguments claimed whole."""
    from tui.context.assemble import assemble
    from tui.context.templates.library import template_from_text
    from tui.context.tokens.counting import get_tokenizer

    source = ("{% for m in messages|reverse %}<|im_start|>{{ m.role }}\n{{ m.content or '' }}"
              "{% for c in m.tool_calls or [] %}<tool_call>{{ c.function.arguments | tojson }}</tool_call>{% endfor %}"
              "<|im_end|>\n{% endfor %}")

    def call(number: int, arguments: dict) -> dict:
        return {"id": f"c{number}", "type": "function", "function": {"name": "f", "arguments": json.dumps(arguments)}}
    messages = [{"role": "assistant", "content": "", "tool_calls": [call(1, {"path": "1.py"}), call(2, {"path": "2.py"})]},
                {"role": "assistant", "content": "hi", "tool_calls": [call(3, {})]}]
    document = assemble(messages, template_from_text(source, "reverse"), get_tokenizer("o200k_base"), {}, False
                        ).document
    claimed = [document.text[span.start:span.end] for span in document.spans if span.kind == "tool_call"]
    assert claimed == ["{}", '{"path": "1.py"}', '{"path": "2.py"}']
