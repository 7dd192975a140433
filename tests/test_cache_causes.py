"""The first divergent token between two requests, and its cause class; the report after the server's figures."""

from tui.context import builtin_template, get_tokenizer, message_from_dict
from tui.context.policy.truncation import PolicySettings
from tui.context.cache.causes import CauseClass
from tui.context.cache.prefix import token_start
from tui.context.cache.predict import cache_report, held_prompt
from tui.context.cache.llamacpp import LlamaCppCache
from tui.context.request import RequestSettings, build_request

CALL = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": {"city": "Paris", "day": 2}}}
TOOL_F = {"type": "function", "function": {"name": "f", "description": "first",
                                           "parameters": {"type": "object", "properties": {}}}}
TOOL_G = {"type": "function", "function": {"name": "g", "description": "second", "parameters": {"type": "object"}}}


def build(items, previous=None, template="qwen3", **settings):
    messages = [message_from_dict(item, i) for i, item in enumerate(items)]
    setup = RequestSettings(builtin_template(template), get_tokenizer("qwen3"), **settings)
    return build_request(messages, setup, previous.shape if previous else None, 2 if previous else 1)


def pair(before, after, **settings):
    first = build(before, **settings.get("first", {}))
    return build(after, first, **settings.get("second", {})).prefix


def chat(system="You are terse.", first="Hi", call=CALL, reasoning=None):
    assistant = {"role": "assistant", "content": "", "tool_calls": [call]}
    if reasoning:
        assistant["reasoning_content"] = reasoning
    return [{"role": "system", "content": system}, {"role": "user", "content": first}, assistant,
            {"role": "tool", "tool_call_id": "c1", "content": "sunny"}]


def test_system_prompt_and_edited_turn():
    assert pair(chat("Time 10:00."), chat("Time 10:01.")).cause_class == CauseClass.SYSTEM_PROMPT
    assert pair(chat(first="Hi"), chat(first="Hello")).cause_class == CauseClass.EDITED_TURN


def test_json_key_order_of_tool_call_arguments():
    reordered = {**CALL, "function": {"name": "lookup", "arguments": {"day": 2, "city": "Paris"}}}
    prefix = pair(chat(), chat(call=reordered))
    assert prefix.cause_class == CauseClass.JSON_KEY_ORDER and "c1" not in prefix.cause and "#2" in prefix.cause
    assert prefix.diverges.startswith('{"day"') or "day" in prefix.diverges  # the first divergent text
    other = {**CALL, "function": {"name": "lookup", "arguments": {"city": "Rome", "day": 2}}}
    assert pair(chat(), chat(call=other)).cause_class == CauseClass.EDITED_TURN  # other values: an edit, not key order


def test_tool_list_schema_order_and_json_key_order():
    changed = pair(chat(), chat(), first={"tools": [TOOL_F]}, second={"tools": [TOOL_F, TOOL_G]})
    assert (changed.cause_class, changed.cause) == (CauseClass.TOOLS, "changed tool list")
    swapped = pair(chat(), chat(), first={"tools": [TOOL_F, TOOL_G]}, second={"tools": [TOOL_G, TOOL_F]})
    assert swapped.cause_class == CauseClass.TOOLS and swapped.cause == "tools reordered: f, g -> g, f"
    keys = {"type": "function", "function": {"parameters": {"properties": {}, "type": "object"},
                                             "description": "first", "name": "f"}}
    rewritten = pair(chat(), chat(), first={"tools": [TOOL_F]}, second={"tools": [keys]})
    assert rewritten.cause_class == CauseClass.JSON_KEY_ORDER


def test_reasoning_re_rendered_when_a_new_user_turn_follows():
    # Qwen3 writes the reasoning of the assistant turn after the last user message, and drops it once a
    # new user message follows: the same turn renders differently in the next request
    before = chat(reasoning="I should look it up.")
    after = [*before, {"role": "assistant", "content": "Sunny."}, {"role": "user", "content": "And Rome?"}]
    prefix = pair(before, after)
    assert prefix.cause_class == CauseClass.REASONING and "#2" in prefix.cause
    assert prefix.diverged.startswith("<think>") and prefix.diverges.startswith("<tool_call>")


def test_template_value_and_truncation_shift():
    date = pair(chat(), chat(), first={"template": "llama3", "variables": {"date_string": "01 Jan 2025"}},
                second={"template": "llama3", "variables": {"date_string": "02 Jan 2025"}})
    assert date.cause_class == CauseClass.TEMPLATE_VALUE
    long = [*chat(), {"role": "user", "content": "filler " * 80}, {"role": "assistant", "content": "ok " * 80},
            {"role": "user", "content": "next"}]
    shifted = pair(long, long, first={"policy": PolicySettings("drop-oldest", context_window=10_000)},
                   second={"policy": PolicySettings("drop-oldest", context_window=250)})
    assert shifted.cause_class == CauseClass.TRUNCATION


def test_report_after_the_reply():
    first = build(chat())
    model = LlamaCppCache()
    model.record(held_prompt(1, first.shape, {"content": ""}, {"prompt_tokens": first.sent_tokens},
                             {"predicted_n": 1}))
    later = [*chat(), {"role": "assistant", "content": "Sunny."}, {"role": "user", "content": "Rome?"}]
    messages = [message_from_dict(item, i) for i, item in enumerate(later)]
    view = build_request(messages, RequestSettings(builtin_template("qwen3"), get_tokenizer("qwen3")),
                         request_number=2, server=model)
    prefix = view.prefix
    assert prefix.source == 1 and prefix.predicted_cached == first.sent_tokens  # the whole first prompt
    agreed = cache_report(prefix, prefix.predicted_cached + 1, view.shape, view.document)
    assert agreed.agrees and agreed.explanation.startswith("as predicted")
    fewer = cache_report(prefix, 5, view.shape, view.document, reported_prompt=view.sent_tokens + 2)
    assert not fewer.agrees and fewer.difference == 5 - prefix.predicted_cached and "fewer" in fewer.explanation
    assert fewer.where.startswith("message #0 (system)") and "counted" in fewer.notes[0]
    more = cache_report(prefix, view.sent_tokens - 1, view.shape, view.document)
    # the last token the server computed is the generation prompt's final newline, which no message wrote
    assert "more" in more.explanation and more.where == "no message, marker: '\\n'"


def test_token_start_finds_each_token():
    view = build(chat())
    index = view.shape.tokens
    starts = [token_start(index, k) for k in range(index.total)]
    assert starts == sorted(starts) and starts[0] == 0 and len(set(starts)) == index.total
    for k in range(index.total):  # the token starting there is the k-th: k tokens end at or before it
        assert index.tokens_before(starts[k]) == k


def test_a_template_switch_or_fences_toggled_is_named_as_such():
    """Before: 'template text changed' after a template switch, 'edited tool message' after toggling fences."""
    from tui.context.cache.causes import CauseClass
    from tui.context.untrusted.fences import FenceStyle
    from tui.context.messages import Message, Provenance
    from tui.context.request import RequestSettings, build_request
    from tui.context.templates.library import builtin_template
    from tui.context.tokens.tokenizers import get_tokenizer
    messages = [Message("user", "hi", id="u1"), Message("assistant", "hello", id="a1"),
                Message("tool", "a result", id="t1", provenance=Provenance("tool", False)), Message("user", "n", id="u2")]
    qwen = get_tokenizer("qwen3")
    first = build_request(messages, RequestSettings(builtin_template("chatml"), qwen))
    switched = build_request(messages, RequestSettings(builtin_template("qwen3"), qwen), first.shape, 2)
    assert (switched.prefix.cause_class, switched.prefix.cause) == \
        (CauseClass.SWITCHED, "template switched (chatml -> qwen3)")
    unfenced = build_request(messages, RequestSettings(builtin_template("qwen3"), qwen,
                                                       fences=FenceStyle(enabled=False)), switched.shape, 3)
    assert unfenced.prefix.cause_class == CauseClass.SWITCHED and unfenced.prefix.cause.startswith("fences turned off")
    again = build_request(messages, RequestSettings(builtin_template("qwen3"), qwen,
                                                    fences=FenceStyle(enabled=False)), unfenced.shape, 4)
    assert again.prefix.cause_class != CauseClass.SWITCHED


def test_an_edit_is_not_blamed_on_fences_toggled_for_other_messages():
    """Found by review: with no untrusted text, an edit and fences turned off was named 'fences turned off'."""
    from tui.context.cache.causes import CauseClass
    from tui.context.untrusted.fences import FenceStyle
    from tui.context.messages import Message
    from tui.context.request import RequestSettings, build_request
    from tui.context.templates.library import builtin_template
    from tui.context.tokens.tokenizers import get_tokenizer
    qwen, template = get_tokenizer("qwen3"), builtin_template("qwen3")
    before = [Message("user", "hi there friend", id="u1"), Message("assistant", "hello", id="a1"),
              Message("user", "next", id="u2")]
    after = [Message("user", "hi there friends", id="u1"), *before[1:]]
    first = build_request(before, RequestSettings(template, qwen))
    second = build_request(after, RequestSettings(template, qwen, fences=FenceStyle(enabled=False)), first.shape, 2)
    assert second.prefix.cause_class == CauseClass.EDITED_TURN and "#0" in second.prefix.cause


def test_a_switch_between_two_templates_of_one_name_is_named():
    from tui.context.cache.causes import CauseClass
    from tui.context.messages import Message
    from tui.context.request import RequestSettings, build_request
    from tui.context.templates.library import builtin_template, template_from_text
    from tui.context.tokens.tokenizers import get_tokenizer
    messages = [Message("user", "hi", id="u1")]
    one = template_from_text(builtin_template("chatml").source, "file:a.jinja", "custom")
    two = template_from_text(builtin_template("qwen3").source, "file:b.jinja", "custom")
    first = build_request(messages, RequestSettings(one, get_tokenizer("qwen3")))
    second = build_request(messages, RequestSettings(two, get_tokenizer("qwen3")), first.shape, 2)
    assert second.prefix.cause_class == CauseClass.SWITCHED and "another custom template" in second.prefix.cause


def test_turns_restored_after_drops_are_named_not_called_a_template_change():
    """A window made larger again sends back turns an earlier request dropped: that is the cause, not 'template
    text changed' (said before, since the first difference lies in a header the earlier request did not have)."""
    long = [*chat(), {"role": "user", "content": "filler " * 80}, {"role": "assistant", "content": "ok " * 80},
            {"role": "user", "content": "next"}]
    restored = pair(long, long, first={"policy": PolicySettings("drop-oldest", context_window=250)},
                    second={"policy": PolicySettings("drop-oldest", context_window=10_000)})
    assert restored.cause_class == CauseClass.TRUNCATION, restored.cause
    assert "back" in restored.cause and "#1" in restored.cause and "template" not in restored.cause


def test_turns_dropped_then_deleted_are_not_said_to_be_back():
    long = [*chat(), {"role": "user", "content": "filler " * 80}, {"role": "assistant", "content": "ok " * 80},
            {"role": "user", "content": "next"}]
    long = [{**item, "id": f"k{index}"} for index, item in enumerate(long)]  # ids that stay with their message
    first = build(long, policy=PolicySettings("drop-oldest", context_window=250))
    assert first.shape.dropped  # the oldest turns were left out
    kept = [item for item in long if item["id"] not in first.shape.dropped]  # the user deletes them
    kept[-1] = {**kept[-1], "content": "next, edited"}
    later = build(kept, first, policy=PolicySettings("drop-oldest", context_window=10_000)).prefix
    assert "back" not in later.cause, later.cause
