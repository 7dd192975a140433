"""Each provider's cache rule from the one table (tui/context/cache/rules.py), on worked examples.

Every expected figure is worked out by hand in the comment beside it, from the rule as the provider
documents it (the table's `sources`), not from the code under test.
"""

import pytest

from test_cache_model import shape
from tui.context.cache.prefix import RequestShape, predict_cached
from tui.context.cache.history import HeldPrompt
from tui.context.cache.rules import (RULES, breakpoint_cost, breakpoint_usage, disputed_for, minimum_for, prefix_cached,
                                     unit_cached)
from tui.context.cache.providers import ProviderCache
from tui.context.families.registry import cache_rule


def test_every_rule_says_where_its_figures_come_from():
    for rule in RULES.values():
        assert rule.key in ("none", "unknown") or rule.sources, rule.key
        assert rule.read_multiplier is None or 0 < rule.read_multiplier < 1


@pytest.mark.parametrize("shared, total, expected", [
    (1023, 5000, 0),  # under 1,024 nothing is cached
    (1024, 5000, 1024),
    (1151, 5000, 1024),  # 1,024 + 127: the next 128-token step is not complete
    (1152, 5000, 1152),  # 1,024 + 128
    (1500, 2000, 1408),  # 1,024 + floor(476 / 128) x 128 = 1,024 + 384
    (5000, 6000, 4992),  # 1,024 + floor(3,976 / 128) x 128 = 1,024 + 3,968
])
def test_openai_1024_then_steps_of_128(shared, total, expected):
    assert predict_cached("openai", shared, total) == expected


def test_llamacpp_reuses_all_but_the_last_prompt_token():
    assert predict_cached("llama.cpp", 316, 316) == 315  # the whole prompt again: the last token is recomputed
    assert predict_cached("llama.cpp", 10, 50) == 10


@pytest.mark.parametrize("model, minimum", [
    ("claude-sonnet-4-5", 1024), ("claude-opus-4-1-20250805", 1024), ("claude-3-7-sonnet-20250219", 1024),
    ("claude-opus-4-5-20251101", 4096), ("claude-haiku-4-5", 4096), ("anthropic/claude-sonnet-4-6", 1024),
    ("claude-3-5-haiku-20241022", 2048), ("claude-3-haiku-20240307", 2048), ("claude-opus-5", 512),
    ("claude-fable-5-20260901", 512), ("claude-opus-4-8", 1024), ("claude-opus-4-7", 4096),
])
def test_anthropic_minimums_per_model(model, minimum):
    assert minimum_for(RULES["anthropic"], model) == minimum


def test_where_published_minimums_disagree_the_table_says_so():
    assert "2,048" in disputed_for(RULES["anthropic"], "claude-sonnet-4-6")  # gateway docs said 2,048
    assert "third party" in disputed_for(RULES["anthropic"], "claude-fable-5")
    assert disputed_for(RULES["anthropic"], "claude-haiku-4-5") == ""  # every source agrees: nothing to say


def test_anthropic_write_then_read_and_what_it_costs():
    # Sonnet 4.5 ($3 per million input tokens): a 3,000-token system prompt marked with cache_control,
    # then a 200-token question. Nothing is cached yet: the marked 3,000 are written, 200 are plain input.
    first = breakpoint_usage([3000, 3200], [0], [], 3200, 1024)
    assert (first.read, first.write, first.uncached) == (0, 3000, 200)
    # 3,000 x $3.75/M (1.25x) = $0.01125; 200 x $3/M = $0.0006; together $0.01185
    assert breakpoint_cost(first, 3e-6) == pytest.approx(0.01185)
    # 1h lifetime: 3,000 x $6/M (2x) = $0.018, + $0.0006 = $0.0186
    assert breakpoint_cost(first, 3e-6, "1h") == pytest.approx(0.0186)
    # the next question (250 tokens) within the lifetime reads the 3,000: 3,000 x $0.30/M (0.1x) = $0.0009,
    # + 250 x $3/M = $0.00075: $0.00165
    second = breakpoint_usage([3000, 3250], [0], [3000], 3250, 1024)
    assert (second.read, second.write, second.uncached) == (3000, 0, 250)
    assert breakpoint_cost(second, 3e-6) == pytest.approx(0.00165)


def test_anthropic_minimum_breakpoint_limit_and_lookback():
    # 900 marked tokens on a 1,024-minimum model: nothing written, nothing read, all 1,100 are input
    small = breakpoint_usage([900, 1100], [0], [], 1100, 1024)
    assert (small.read, small.write, small.uncached) == (0, 0, 1100) and "minimum" in small.problem
    five = breakpoint_usage([100, 200, 300, 400, 500], [0, 1, 2, 3, 4], [], 500, 0)
    assert "at most 4" in five.problem and five.read == five.write == 0
    # 30 blocks of 100 tokens, the breakpoint on block 25 (ends at 2,500). The lookback covers blocks
    # 6..25 (20 blocks): an entry at block 3 (300 tokens) is not found, one at block 7 (700) is
    ends = [100 * i for i in range(1, 31)]
    assert breakpoint_usage(ends, [24], [300], 3000, 500).read == 0
    assert breakpoint_usage(ends, [24], [700], 3000, 500).read == 700
    # (and the 2,500 marked are written less what was read: 1,800)
    assert breakpoint_usage(ends, [24], [700], 3000, 500).write == 1800


def marked(text: str, ends: list[tuple[int, str]]) -> RequestShape:
    found = shape(text)
    found.blocks = ends
    return found


def test_anthropic_entries_expire_after_their_lifetime():
    system, t0 = "S" * 3000, 1_000_000.0
    for ttl, later, expected in (("5m", 240, 3000), ("5m", 400, 0), ("1h", 400, 3000), ("1h", 3700, 0)):
        cache = ProviderCache("anthropic", "claude-sonnet-4-5")
        cache.record(HeldPrompt(1, marked(system + "u" * 200, [(3000, ttl), (3200, "")]), 3200, sent_at=t0))
        found = cache.predict(marked(system + "v" * 250, [(3000, ttl), (3250, "")]), now=t0 + later)
        assert found.cached == expected, (ttl, later)
        assert found.write == 3000 - expected  # what is not read is written again
        assert (found.source.number if found.source else None) == (1 if expected else None)


def test_gemini_implicit_minimums_and_best_effort():
    gemini = RULES["gemini"]
    assert minimum_for(gemini, "gemini-2.5-flash") == 2048 and minimum_for(gemini, "models/gemini-2.5-pro") == 2048
    assert minimum_for(gemini, "gemini-3-pro-preview") == 4096  # models not listed: the 3.x figure
    assert prefix_cached(gemini, 5000, 6000, "gemini-2.5-flash") == 5000  # no step: every shared token counts
    assert prefix_cached(gemini, 2000, 6000, "gemini-2.5-flash") == 0  # under 2,048
    assert gemini.best_effort and RULES["openai"].best_effort and not RULES["anthropic"].best_effort


def test_deepseek_reads_only_whole_units():
    # the documentation's examples: a unit is read only when the new request contains all of it
    assert unit_cached([(150, 170)]) == 150  # A+B stored; A+B+C contains it
    assert unit_cached([(150, 100)]) == 0  # A+B stored; A+C shares only A
    assert unit_cached([(150, 100), (100, 100)]) == 100  # the common prefix A, stored as its own unit


def test_deepseek_units_from_earlier_requests():
    cache = ProviderCache("deepseek")
    # request 1: input A+B (150 tokens), 20 generated tokens 'R...': units at 150 (input) and 170 (output)
    cache.record(HeldPrompt(1, shape("A" * 100 + "B" * 50), 150, 20, "R" * 20))
    follow = cache.predict(shape("A" * 100 + "B" * 50 + "R" * 20 + "C" * 30))
    assert (follow.cached, follow.source.number) == (170, 1)  # the output end: A+B and the reply as generated
    assert cache.predict(shape("A" * 100 + "C" * 50)).cached == 0  # A+C contains no whole unit
    cache.record(HeldPrompt(2, shape("A" * 100 + "C" * 50), 150))
    # A+B and A+C share A (100 tokens): stored as a unit, which A+D contains
    assert cache.predict(shape("A" * 100 + "D" * 50)).cached == 100


def test_hosted_servers_get_their_provider_rule():
    assert cache_rule("llama.cpp", "claude-sonnet-4-5") == "llama.cpp"
    assert cache_rule("anthropic", "claude-sonnet-4-5") == "anthropic"
    assert cache_rule("openai-compatible", "claude-opus-4-5") == "anthropic"  # a gateway serving Claude
    assert cache_rule("gemini", "gemini-2.5-pro") == "gemini" and cache_rule("deepseek", "deepseek-chat") == "deepseek"
    assert cache_rule("vllm", "deepseek-r1-distill") == "unknown"  # an open model on another server: not guessed
    assert cache_rule("litellm", "mystery") == "unknown"  # a gateway: its upstream's rule is not guessed either
    assert cache_rule("openai", "gpt-4o") == "openai"


def test_against_the_previous_request_only_every_rule_applies():
    from tui.context.cache.predict import cache_prefix
    from tui.context.document import Document, Span

    def document(text):
        return Document(text, [Span(0, len(text), 0, "content")], ["user"])

    before, after = shape("A" * 100 + "B" * 50), shape("A" * 100 + "B" * 50 + "C" * 10)
    # DeepSeek: the previous input (150 tokens) is a stored unit the new request contains whole
    assert cache_prefix(before, after, document(after.text), "deepseek").predicted_cached == 150
    edited = shape("A" * 100 + "X" * 60)
    assert cache_prefix(before, edited, document(edited.text), "deepseek").predicted_cached == 0
    # Anthropic: nothing marked, nothing cached; the system text marked (1,024 tokens or more) is read back
    assert cache_prefix(before, after, document(after.text), "anthropic").predicted_cached == 0
    long_before = marked("S" * 1500 + "u" * 10, [(1500, "5m"), (1510, "")])
    long_after = marked("S" * 1500 + "v" * 20, [(1500, "5m"), (1520, "")])
    assert cache_prefix(long_before, long_after, document(long_after.text), "anthropic").predicted_cached == 1500


def test_anthropic_prediction_names_where_the_prompts_part():
    from tui.context.cache.predict import predict_prefix
    from tui.context.document import Document, Span

    cache = ProviderCache("anthropic", "claude-sonnet-4-5")
    cache.record(HeldPrompt(1, marked("S" * 1500 + "u" * 10, [(1500, "5m"), (1510, "")]), 1510))
    current = marked("S" * 1500 + "v" * 20, [(1500, "5m"), (1520, "")])
    document = Document(current.text, [Span(0, 1500, 0, "content"), Span(1500, 1520, 1, "content")],
                        ["system", "user"])
    current.message_ids, current.message_texts, current.message_roles = ["m0", "m1"], ["S" * 1500, "v" * 20], \
        ["system", "user"]
    prefix = predict_prefix(cache, current, document, "anthropic")
    # 1,500 read from request 1's entry; the prompts part at character 1,500, in the user's message
    assert (prefix.predicted_cached, prefix.source, prefix.chars, prefix.message) == (1500, 1, 1500, 1)
    assert prefix.diverges.startswith("v") and prefix.diverged.startswith("u")


def test_a_server_whose_rule_is_not_known_gets_no_prediction_and_the_report_says_so():
    """Behind a gateway the Cache tab predicted with OpenAI's rule ("openai would reuse 0") while the server reused
    19, and nothing said the rule was a guess (issue 18)."""
    from tui.context.cache.predict import RULE_UNKNOWN, cache_report
    from tui.context.cache.rules import rule_known
    from tui.context.request import RequestSettings, build_request
    from tui.context.messages import Message
    from tui.context.templates.library import builtin_template
    from tui.context.tokens.tokenizers import get_tokenizer
    settings = RequestSettings(builtin_template("qwen3"), get_tokenizer("qwen3"), cache_rule=cache_rule("litellm", "x"))
    view = build_request([Message("user", "hello there " * 20, id="u1")], settings)
    assert not rule_known(view.prefix.rule)
    report = cache_report(view.prefix, 19, view.shape, view.document)
    assert report.cause_class == RULE_UNKNOWN and "reused 19" in report.explanation and "nothing was predicted" in \
        report.explanation


def _sent(items: list[dict], cache: ProviderCache, number: int):
    """A GPT-5.6 request rendered as ctxpane sends it, predicted against `cache`, then held by it."""
    from tui.context import builtin_template, get_tokenizer, message_from_dict
    from tui.context.request import RequestSettings, build_request
    messages = [message_from_dict(item, i) for i, item in enumerate(items)]
    view = build_request(messages, RequestSettings(builtin_template("openai"), get_tokenizer("o200k_base")),
                         request_number=number, server=cache)
    cache.record(HeldPrompt(number, view.shape, view.sent_tokens))
    return view


def test_gpt_5_6_caches_at_its_breakpoints_not_at_128_token_steps():
    """GPT-5.6's managed breakpoint sits after the latest user or tool message: a changed question after a long
    stable system prompt reads nothing (the older rule would read the system prompt in 128-token steps), a
    growing conversation reads what the last request wrote, and a prompt_cache_breakpoint keeps the system."""
    assert cache_rule("openai", "gpt-5.6-sol") == "openai-5.6" and cache_rule("openai", "gpt-5.5") == "openai"
    system = {"role": "system", "content": "Rules. " + "Keep answers short and exact. " * 300}
    cache = ProviderCache("openai-5.6", "gpt-5.6-sol")
    first = _sent([system, {"role": "user", "content": "What is 2+2?"}], cache, 1)
    assert first.prefix.predicted_cached == 0 and first.prefix.write > 1024  # written at the managed breakpoint
    other = _sent([system, {"role": "user", "content": "Name a prime."}], cache, 2)
    assert other.prefix.predicted_cached == 0, other.prefix  # no entry ends where this prompt still agrees
    stable = other.shape.tokens.tokens_before(other.shape.blocks[0][0])  # the system prompt, shared with #1
    old_rule = predict_cached("openai", stable, other.sent_tokens)
    assert old_rule >= 1024 and old_rule % 128 == 0  # what the rule before GPT-5.6 would have said
    grown = _sent([system, {"role": "user", "content": "Name a prime."}, {"role": "assistant", "content": "7"},
                   {"role": "user", "content": "Another?"}], cache, 3)
    assert grown.prefix.predicted_cached == other.prefix.write and grown.prefix.source == 2  # no rounding
    kept = {"role": "system", "content": [{"type": "text", "text": system["content"],
                                           "prompt_cache_breakpoint": {"mode": "explicit"}}]}
    marked = ProviderCache("openai-5.6", "gpt-5.6-sol")
    _sent([kept, {"role": "user", "content": "What is 2+2?"}], marked, 1)
    again = _sent([kept, {"role": "user", "content": "Name a prime."}], marked, 2)
    assert 1024 < again.prefix.predicted_cached < again.sent_tokens  # the system prompt, read at its mark


@pytest.mark.parametrize("model, rule", [
    ("gpt-5.6-sol", "openai-5.6"), ("chatgpt-5.6", "openai-5.6"), ("codex-gpt-5.6-mini", "openai-5.6"),
    ("ft:gpt-5.6:org::x", "openai-5.6"), ("gpt-6-sol", "openai-5.6"), ("azure/gpt-5.60", "openai-5.6"),
    ("gpt-5.5", "openai"), ("gpt-5.06", "openai"), ("gpt-4o", "openai"), ("chatgpt-4o-latest", "openai"),
])
def test_the_gpt_generation_picks_the_rule(model, rule):
    assert cache_rule("openai", model) == rule
    from tui.context.families.registry import offline_cache_rule
    assert offline_cache_rule(model) == rule  # gpt-6-sol has no registry row: still OpenAI's rule, not llama.cpp's


def test_too_many_breakpoints_are_said_in_the_rules_own_words():
    said = breakpoint_usage([10, 20, 30, 40, 50], [0, 1, 2, 3, 4], [], 50, 1, RULES["openai-5.6"]).problem
    assert "cache_control" not in said and "5 cache breakpoints (the provider's own one included)" in said
    assert "cache_control" not in breakpoint_usage([1] * 5, list(range(5)), [], 5, 1, RULES["anthropic"]).problem
