"""The cache panel's cause when a system prompt is added in front of a conversation."""

import pytest

from tui.context import builtin_template, get_tokenizer
from tui.context.messages import Message, Provenance
from tui.context.request import RequestSettings, build_request

TURNS = [Message("user", "What is the quota?", id="m1"),
         Message("assistant", "250 GB.", provenance=Provenance("model", True), id="m2"),
         Message("user", "And the price?", id="m3")]


@pytest.mark.parametrize("template", ["chatml", "qwen3", "llama3", "harmony"])
def test_adding_a_system_prompt_is_named_as_the_cause_not_template_text(template):
    """Seen: "template text changed" when the user had added a system prompt (Ctrl+E)."""
    settings = RequestSettings(builtin_template(template), get_tokenizer("o200k_base"))
    first = build_request(TURNS, settings)
    system = Message("system", "Be terse.", provenance=Provenance("system_prompt", True), id="sys")
    view = build_request([system, *TURNS], settings, previous=first.shape, request_number=2)
    assert view.prefix.cause == "system prompt added (#0)"
