"""Built-in templates give the same document as the models' own templates on ordinary conversations."""

import pytest

from conftest import template_source
from tui.context.templates.library import (TemplateNotFound, builtin_names, builtin_template, load_template,
                                          template_from_text)
from tui.context.templates.hf_render import TemplateRenderError

CONVERSATIONS = {
    "system_3turn": [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Hi  there"},
                     {"role": "assistant", "content": "Hello!"}, {"role": "user", "content": "Name a colour.\nOne."}],
    "no_system": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"},
                  {"role": "user", "content": "Bye"}],
    "single": [{"role": "user", "content": "Héllo 👋 <b>x</b>"}],
    "tools": [{"role": "system", "content": "Use tools."}, {"role": "user", "content": "Weather and time?"},
              {"role": "assistant", "content": "", "tool_calls": [
                  {"id": "a", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Oslo"}}},
                  {"id": "b", "type": "function", "function": {"name": "get_time", "arguments": {"tz": "CET"}}}]},
              {"role": "tool", "tool_call_id": "a", "content": "rain"},
              {"role": "tool", "tool_call_id": "b", "content": "10:00"},
              {"role": "assistant", "content": "Rainy, ten o'clock."}, {"role": "user", "content": "Thanks"}],
    "long": [{"role": "user", "content": f"turn {i}"} if i % 2 == 0 else {"role": "assistant", "content": f"ok {i}"}
             for i in range(11)],
}
PAIRS = [
    ("chatml", "Qwen-Qwen2.5-7B-Instruct.jinja", {}),
    ("qwen3", "Qwen-Qwen3-0.6B.jinja", {}),
    ("qwen3", "qwen3-server.jinja", {}),
    ("llama3", "meta-llama-Llama-3.1-8B-Instruct.jinja", {"bos_token": "<|begin_of_text|>"}),
    ("llama3", "meta-llama-Llama-3.3-70B-Instruct.jinja", {"bos_token": "<|begin_of_text|>"}),
    ("mistral-tekken", "mistralai-Mistral-Nemo-Instruct-2407.jinja", {"bos_token": "<s>", "eos_token": "</s>"}),
    ("gemma", "google-gemma-2-2b-it.jinja", {"bos_token": "<bos>"}),
    ("deepseek-r1", "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", {"bos_token": "<｜begin▁of▁sentence｜>"}),
    ("phi3", "microsoft-Phi-3.5-mini-instruct.jinja", {"eos_token": "<|endoftext|>"}),
]


TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather.",
                                           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]


@pytest.mark.parametrize("builtin,real", [("chatml", "Qwen-Qwen2.5-7B-Instruct.jinja"),
                                          ("qwen3", "Qwen-Qwen3-0.6B.jinja"), ("qwen3", "qwen3-server.jinja")])
@pytest.mark.parametrize("conversation", ["tools", "single", "system_3turn"])
def test_builtin_matches_real_template_with_tools(builtin, real, conversation):
    messages = CONVERSATIONS[conversation]
    expected = template_from_text(template_source(real), "test").render(messages, tools=TOOLS,
                                                                         add_generation_prompt=True)
    assert builtin_template(builtin).render(messages, tools=TOOLS, add_generation_prompt=True) == expected


@pytest.mark.parametrize("builtin,real,defaults", PAIRS, ids=[f"{b}-vs-{r}" for b, r, _ in PAIRS])
@pytest.mark.parametrize("conversation", [name for name in CONVERSATIONS if name != "tools"])
@pytest.mark.parametrize("agp", [False, True])
def test_builtin_matches_real_template(builtin, real, defaults, conversation, agp):
    messages = CONVERSATIONS[conversation]
    reference = template_from_text(template_source(real), "test", **defaults)
    try:
        expected = reference.render(messages, add_generation_prompt=agp)
    except TemplateRenderError:
        # Gemma 2's own template refuses a system turn; the built-in folds it into the first user turn.
        assert builtin == "gemma"
        folded = builtin_template(builtin).render(messages, add_generation_prompt=agp)
        assert folded.startswith("<bos><start_of_turn>user\nYou are terse.\n\nHi  there<end_of_turn>")
        return
    assert builtin_template(builtin).render(messages, add_generation_prompt=agp) == expected


def test_every_builtin_renders_an_ordinary_conversation():
    for name in builtin_names():
        text = builtin_template(name).render(CONVERSATIONS["system_3turn"], add_generation_prompt=True)
        assert "Name a colour." in text and "Hello!" in text, name


def test_mistral_v3_has_spaces_and_tekken_does_not():
    messages = CONVERSATIONS["no_system"]
    assert builtin_template("mistral-v3").render(messages) == "<s>[INST] Hi[/INST] Hello</s>[INST] Bye[/INST]"
    assert builtin_template("mistral").render(messages) == builtin_template("mistral-v3").render(messages)
    assert builtin_template("mistral-tekken").render(messages) == "<s>[INST]Hi[/INST]Hello</s>[INST]Bye[/INST]"


def test_qwen3_thinking_switch():
    out = builtin_template("qwen3").render([{"role": "user", "content": "q"}], add_generation_prompt=True,
                                           enable_thinking=False)
    assert out.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")


def test_unknown_builtin_names_the_known_ones():
    with pytest.raises(TemplateNotFound, match="chatml"):
        builtin_template("nope")
    with pytest.raises(TemplateNotFound, match="not found"):
        load_template("/no/such/template.jinja")


def test_special_strings_of_a_template():
    specials = builtin_template("chatml").special_strings()
    assert "<|im_start|>" in specials and "<|im_end|>" in specials
    assert "<|start|>" in builtin_template("harmony").special_strings()
    assert "[INST]" in builtin_template("mistral-v3").special_strings()
