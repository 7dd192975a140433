"""The rendered document: spans tile the text, and each message's text sits in its own span."""

import json

import pytest
import time_machine

from conftest import load_cases, template_source
from tui.context import build_document
from tui.context.templates.library import builtin_template, template_from_text

CASES = [c for c in load_cases() if "expected" in c]


def case_template(case):
    if case["template"] == "harmony":
        return builtin_template("harmony")
    return template_from_text(template_source(case["template"]), "test")


def field_texts(message):
    content = message.get("content")
    if isinstance(content, list):
        yield from (p["text"] for p in content if isinstance(p, dict) and p.get("text"))
    elif isinstance(content, str) and content:
        yield content


def attributed(doc, index, text):
    """True when `text` (or the template's transform of it) lies in a span of message `index`."""
    own = [doc.span_text(s) for s in doc.spans if s.message == index and s.kind != "marker"]
    variants = {text, text.strip(), json.dumps(text, ensure_ascii=False)[1:-1]}
    return any(v and (v in piece or piece in v) for piece in own for v in variants)


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_spans_tile_and_attribute(case):
    template = case_template(case)
    with time_machine.travel(case.get("now", "2025-03-14T12:00:00+00:00"), tick=False):
        doc = build_document(template.render, case["messages"], template.special_strings(), **case["kwargs"])
    assert doc.text == case["expected"]
    doc.check()
    assert "".join(doc.span_text(s) for s in doc.spans) == doc.text
    for index, message in enumerate(case["messages"]):
        for text in field_texts(message):
            if text.strip() and text.strip() in doc.text:
                assert attributed(doc, index, text), f"message {index} text not in its own span"


def test_transformed_content_is_marked():
    template = template_from_text("{% for m in messages %}[{{ m.content | trim }}]{% endfor %}", "test")
    doc = build_document(template.render, [{"role": "user", "content": "  hi  "}], [])
    spans = [s for s in doc.spans if s.kind == "content"]
    assert [doc.span_text(s) for s in spans] == ["hi"]
    assert spans[0].transformed


def test_verbatim_content_is_not_marked_transformed():
    template = builtin_template("chatml")
    doc = build_document(template.render, [{"role": "user", "content": "hello"}], template.special_strings(),
                         add_generation_prompt=True)
    (span,) = [s for s in doc.spans if s.kind == "content"]
    assert doc.span_text(span) == "hello" and not span.transformed
    # the generation prompt belongs to no message
    assert doc.spans[-1].message is None and doc.span_text(doc.spans[-1]) == "<|im_start|>assistant\n"


def test_headers_belong_to_their_message():
    template = builtin_template("llama3")
    messages = [{"role": "system", "content": "S"}, {"role": "user", "content": "U"},
                {"role": "assistant", "content": "A"}]
    doc = build_document(template.render, messages, template.special_strings())
    owners = {doc.span_text(s): s.message for s in doc.spans if s.kind == "marker"}
    assert owners["<|start_header_id|>user<|end_header_id|>\n\n"] == 1
    assert owners["<|start_header_id|>assistant<|end_header_id|>\n\n"] == 2
    assert doc.spans[0].message is None and doc.span_text(doc.spans[0]) == "<|begin_of_text|>"


def test_reasoning_and_tool_call_kinds():
    template = builtin_template("harmony")
    messages = [{"role": "user", "content": "q"},
                {"role": "assistant", "content": "", "reasoning_content": "think hard",
                 "tool_calls": [{"id": "c1", "type": "function",
                                 "function": {"name": "f", "arguments": "{\"a\": 1}"}}]}]
    doc = build_document(template.render, messages, template.special_strings(), current_date="2025-01-01")
    kinds = {doc.span_text(s): s.kind for s in doc.spans}
    assert kinds["think hard"] == "reasoning"
    assert kinds['{"a": 1}'] == "tool_call"


def test_content_as_parts():
    messages = [{"role": "user", "content": [{"type": "text", "text": "part one"}]}]
    source = "{% for m in messages %}{% for p in m.content %}{{ p.text }}{% endfor %}{% endfor %}"
    doc = build_document(template_from_text(source, "t").render, messages, [])
    assert [(doc.span_text(s), s.message, s.kind) for s in doc.spans] == [("part one", 0, "content")]


def test_first_difference():
    from tui.context.document import first_difference
    assert first_difference("same", "same") is None
    diff = first_difference("ab\ncd", "ab\nxd", ("stored", "fresh"), context=2)
    assert diff == {"index": 3, "line": 2, "stored": "b\ncd", "fresh": "b\nxd"}
    assert first_difference("abc", "ab")["index"] == 2
