"""render_template against reference renderings made by transformers and openai-harmony."""

import os
import time

import pytest
import time_machine

from conftest import load_cases, template_source
from tui.context import render_template
from tui.context.templates.library import builtin_template
from tui.context.templates.hf_render import TemplateRenderError

CASES = load_cases()


@pytest.fixture(autouse=True, scope="module")
def utc():
    old = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    yield
    if old is None:
        os.environ.pop("TZ")
    else:
        os.environ["TZ"] = old
    time.tzset()


def render_case(case):
    if case["template"] == "harmony":
        return builtin_template("harmony").render(case["messages"], **case["kwargs"])
    return render_template(template_source(case["template"]), case["messages"], **case["kwargs"])


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_case_matches_reference(case):
    with time_machine.travel(case.get("now", "2025-03-14T12:00:00+00:00"), tick=False):
        if "expected" in case:
            assert render_case(case) == case["expected"]
        else:
            with pytest.raises(TemplateRenderError) as info:
                render_case(case)
            assert info.value.kind == case["error_type"]
            assert info.value.message == case["error"]


def test_corpus_is_complete():
    # 742 Jinja cases over 24 templates plus 16 harmony cases, as shipped by ../shared/data.
    assert len(CASES) == 758
    assert len({c["template"] for c in CASES}) == 25


def test_sandbox_blocks_mutation_and_private_attributes():
    with pytest.raises(TemplateRenderError) as info:
        render_template("{% set x = [] %}{{ x.append(1) }}", [])
    assert info.value.kind == "SecurityError"
    with pytest.raises(TemplateRenderError) as info:
        render_template("{{ messages.__class__.__mro__ }}", [])
    assert info.value.kind == "SecurityError"
    with pytest.raises(TemplateRenderError):
        render_template("{% set ns = namespace() %}{% set ns._x = 1 %}", [])


def test_raise_exception_is_a_template_error():
    with pytest.raises(TemplateRenderError) as info:
        render_template("{{ raise_exception('no system role') }}", [])
    assert (info.value.kind, info.value.message) == ("TemplateError", "no system role")


def test_syntax_error_is_reported_as_template_error():
    with pytest.raises(TemplateRenderError) as info:
        render_template("{% for m in messages %}", [])
    assert info.value.kind == "TemplateSyntaxError"


def test_hf_tojson_keeps_order_and_unicode():
    out = render_template("{{ messages[0] | tojson }}", [{"role": "user", "content": "é<b>"}])
    assert out == '{"role": "user", "content": "é<b>"}'


def test_none_values_dropped_and_reasoning_aliased():
    source = "{{ messages[0].content is defined }} {{ messages[0].thinking }} {{ messages[0].reasoning_content }}"
    out = render_template(source, [{"role": "assistant", "content": None, "reasoning_content": "r"}])
    assert out == "False r r"


def test_generation_tag_renders_body():
    assert render_template("{% generation %}x{{ 1 }}{% endgeneration %}", []) == "x1"
