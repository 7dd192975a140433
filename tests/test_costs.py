"""The price table and cost arithmetic: worked examples, each computed by hand in its comment."""

from __future__ import annotations

import os
from decimal import Decimal

import pytest

from tui.context.pricing.costs import RequestTokens, add_totals, amounts, curve, request_cost, reusable
from tui.context.pricing.prices import PriceTableError, parse_price_table
from tui.sessions.price_files import load_prices, shipped_prices

TABLE = """
date = 2026-12-01
[models."test-model"]
input = 2.00
cached_input = 0.50
cache_write = 2.50
output = 8.00
aliases = ["test-alias"]
[models."plain-model"]
input = 1.00
output = 4.00
"""


def price(name: str = "test-model"):
    return parse_price_table(TABLE, "test").lookup(name)


def test_one_request_paid_saved_and_lost():
    # 10,000 prompt tokens, 6,000 read from the cache, 500 out; the previous prompt (8,000) could have
    # been served whole, so 8,000 - 6,000 = 2,000 were lost to a break.
    # paid  = 4,000 x $2/M + 6,000 x $0.50/M + 500 x $8/M = 0.008 + 0.003 + 0.004 = $0.015
    # saved = 6,000 x ($2 - $0.50)/M = $0.009;  lost = 2,000 x $1.50/M = $0.003
    # keep-all (12,000 tokens, 8,000 of them cacheable): uncached 12,000 x $2/M + 0.004 = $0.028;
    # cached 4,000 x $2/M + 8,000 x $0.50/M + 0.004 = 0.008 + 0.004 + 0.004 = $0.016
    t = RequestTokens(10_000, 6_000, 0, 500, reusable_tokens=8_000, keep_all_tokens=12_000, keep_all_reusable=8_000)
    cost = request_cost(t, price(), "test-model")
    assert cost["paid"] == pytest.approx(0.015) and cost["saved_by_cache"] == pytest.approx(0.009)
    assert cost["lost_to_cache_break"] == pytest.approx(0.003) and cost["lost_tokens"] == 2_000
    assert cost["keep_all_paid"] == pytest.approx(0.028) and cost["keep_all_cached_paid"] == pytest.approx(0.016)


def test_cache_writes_are_billed_at_their_own_price():
    # 10,000 in: 2,000 written to the cache at $2.50/M, 8,000 fresh at $2/M: 0.005 + 0.016 = $0.021
    figures = amounts(RequestTokens(10_000, 0, 2_000), price())
    assert figures["paid"] == Decimal("0.021") and figures["saved_by_cache"] == 0  # exact: Decimal arithmetic


def test_a_model_without_cache_prices_gets_no_discount():
    # plain-model: cached input costs the input price, so 1,000 cached tokens save nothing
    figures = amounts(RequestTokens(1_000, 1_000), price("plain-model"))
    assert figures["paid"] == Decimal("0.001") and figures["saved_by_cache"] == 0


def test_an_unpriced_model_shows_tokens_only():
    cost = request_cost(RequestTokens(500, 100, output_tokens=20), None, "tiny-qwen3")
    assert not cost["priced"] and cost["paid"] is None and cost["input_tokens"] == 500 and cost["cached_tokens"] == 100


def test_keep_all_grows_with_the_square_of_the_turns_and_a_budget_in_a_line():
    # each turn adds 1,000 tokens; keep-all re-sends all of them, a budget sends at most 2,000:
    # keep-all sent 1k, 2k, 3k, 4k -> totals 1k, 3k, 6k, 10k (n(n+1)/2 x 1k); the budget 1k, 2k, 2k, 2k -> 7k
    previous = None
    costs = []
    for turn in range(1, 5):
        keep_all, sent = turn * 1_000, min(turn, 2) * 1_000
        t = RequestTokens(sent, keep_all_tokens=keep_all)
        previous = add_totals(request_cost(t, price(), "test-model"), previous)
        costs.append(previous)
    rows = curve(costs)
    assert [r["keep_all_total"] for r in rows] == [1_000, 3_000, 6_000, 10_000]
    assert [r["sent_total"] for r in rows] == [1_000, 3_000, 5_000, 7_000]
    # money follows: 7,000 x $2/M = $0.014 paid against 10,000 x $2/M = $0.020 for keep-all
    assert rows[-1]["paid_total"] == pytest.approx(0.014) and rows[-1]["keep_all_paid_total"] == pytest.approx(0.02)


def test_totals_count_only_priced_requests_in_money():
    first = add_totals(request_cost(RequestTokens(1_000), price(), "test-model"), None)  # $0.002
    second = add_totals(request_cost(RequestTokens(1_000), None, "local"), first)
    assert second["cumulative"]["paid"] == pytest.approx(0.002) and second["cumulative"]["priced_requests"] == 1
    assert second["cumulative"]["input_tokens"] == 2_000 and second["cumulative"]["requests"] == 2


def test_reusable_follows_the_provider_rule():
    # llama.cpp: the whole previous prompt, less the last token it always evaluates again, at most
    # this prompt - 1; OpenAI: nothing under 1,024, then 128-token steps: 1,500 -> 1,024 + 3 x 128 = 1,408
    assert reusable("llama.cpp", 300, 500) == 300 and reusable("llama.cpp", 600, 500) == 499
    assert reusable("openai", 1_000, 5_000) == 0 and reusable("openai", 1_500, 5_000) == 1_408
    assert reusable("openai", None, 5_000) == 0


def test_lookup_by_alias_prefix_and_date_suffix():
    table = parse_price_table(TABLE, "test")
    assert table.lookup("test-alias").model == "test-model"
    assert table.lookup("someprovider/test-model-2025-04-14").model == "test-model"
    assert table.lookup("Test-Model-20250929").model == "test-model"
    assert table.lookup("tiny-qwen3") is None


@pytest.mark.parametrize("text, needle", [
    ("date = 2026-12-01\n[models.m]\ninput = 1\n", "models.m.output"),
    ("date = 2026-12-01\n[models.m]\ninput = -1\noutput = 1\n", "models.m.input"),
    ("date = 2026-12-01\n[models.m]\ninput = 1\noutput = 1\ninptu = 2\n", "unknown field inptu"),
    ("date = 2026-12-01\n[models.m]\ninput = 1e9\noutput = 1\n", "<= 10000"),
    ("[models.m]\ninput = 1\noutput = 1\n", "date"),
    ("date = 'soon'\n", "date"),
    ("not toml [", "not valid TOML"),
    ("date = 2026-12-01\n# " + "x" * 300_000, "over the 262,144 bytes allowed"),
])
def test_a_bad_table_is_one_line_naming_the_field(text, needle):
    with pytest.raises(PriceTableError) as caught:
        parse_price_table(text, "prices.toml")
    message = str(caught.value)
    assert needle in message and "\n" not in message and message.startswith("prices.toml")


def test_the_shipped_table_is_dated_and_prices_well_known_models():
    table = shipped_prices()
    assert table.origins == ["shipped: 2026-12-01"]
    sonnet = table.lookup("claude-sonnet-4-5-20250929")
    # Anthropic's multipliers: a cache hit is 0.1x input, a 5-minute write 1.25x
    assert sonnet.cached_input == sonnet.input / 10 and sonnet.cache_write == sonnet.input * 5 / 4
    assert all(p.source for p in table.models.values())


def test_a_users_file_replaces_and_adds_models(tmp_path):
    path = tmp_path / "prices.toml"
    path.write_text('date = 2026-12-05\n[models."gpt-4o"]\ninput = 9\noutput = 9\n[models."my-local"]\n'
                    'input = 0.01\noutput = 0.02\n')
    table, problems = load_prices(path)
    assert not problems and table.lookup("gpt-4o").input == 9 and table.lookup("my-local").origin.endswith(
        "prices.toml")
    assert table.lookup("claude-haiku-4-5") is not None  # the shipped rest stays


def test_a_bad_users_file_keeps_the_shipped_table(tmp_path):
    path = tmp_path / "prices.toml"
    path.write_text("date = 2026-12-05\n[models.x]\ninput = 'cheap'\noutput = 1\n")
    table, problems = load_prices(path)
    assert table.lookup("gpt-4o").input == 2.5 and len(problems) == 1 and "models.x.input" in problems[0]
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    _table, problems = load_prices(fifo)  # never waited on
    assert "not a regular file" in problems[0]


def test_text_from_the_file_in_an_error_is_shown_safely():
    with pytest.raises(PriceTableError) as caught:
        parse_price_table('date = 2026-12-01\n[models."evil\\u202e\\u001b[2J"]\ninput = "x"\noutput = 1\n', "p.toml")
    assert "\u202e" not in str(caught.value) and "\x1b" not in str(caught.value) and "models.evil" in str(caught.value)


def test_a_server_reporting_more_cached_tokens_than_prompt_tokens_is_held_to_the_prompt():
    # 1,000 prompt tokens, "5,000 cached" (a lie: at most the 1,000 can be); the previous prompt was 800.
    # Held to 1,000 cached: paid 1,000 x $0.50/M = $0.0005, saved 1,000 x $1.50/M = $0.0015, nothing lost
    # (800 reusable, 1,000 read); the record and the running totals say 1,000 cached, not 5,000.
    t = RequestTokens(1_000, 5_000, 0, 0, reusable_tokens=800, keep_all_tokens=1_000)
    cost = add_totals(request_cost(t, price(), "test-model"), None)
    assert cost["cached_tokens"] == 1_000 and cost["cumulative"]["cached_tokens"] == 1_000
    assert Decimal(repr(cost["paid"])) == Decimal("0.0005")
    assert Decimal(repr(cost["saved_by_cache"])) == Decimal("0.0015")
    assert cost["lost_tokens"] == 0


@pytest.mark.parametrize("ttl, write_price", [(None, "3.75"), ("5m", "3.75"), ("1h", "6.00")])
def test_a_predicted_anthropic_cache_write_is_priced_at_the_write_price(ttl, write_price):
    """Anthropic bills writing a marked prefix at 1.25x input for 5 minutes (the default) and 2x for an hour: the
    cache model predicts the write, so the cost before any reply must carry it (Sonnet 4.5 in the shipped table:
    $3 input, $3.75 write (5m); a 1-hour write is 2 x $3 = $6.00)."""
    from tui.context.policy.truncation import PolicySettings
    from tui.context.messages import Message, Provenance
    from tui.context.cache.providers import ProviderCache
    from tui.context.request import RequestSettings, build_request
    from tui.context.templates.library import template_from_text
    from tui.context.tokens.counting import get_tokenizer
    from tui.sessions.receipts import cost_of

    control = {"type": "ephemeral", **({"ttl": ttl} if ttl else {})}
    system = [{"type": "text", "text": " ".join(f"rule{i} stays" for i in range(900)), "cache_control": control}]
    messages = [Message("system", system, provenance=Provenance("system_prompt", True), id="sys"),
                Message("user", "hello", provenance=Provenance("user", True), id="u1")]
    parts = template_from_text("{% for m in messages %}<{{ m.role }}>{% if m.content is string %}{{ m.content }}"
                               "{% else %}{% for p in m.content %}{{ p.text }}{% endfor %}{% endif %}\n{% endfor %}",
                               "test")  # content parts rendered as their text
    settings = RequestSettings(parts, get_tokenizer("qwen3"), policy=PolicySettings(), cache_rule="anthropic")
    view = build_request(messages, settings, server=ProviderCache("anthropic", "claude-sonnet-4-5"))
    written = view.prefix.write
    assert written >= 1024 and view.prefix.predicted_cached == 0  # nothing held yet: the marked prefix is written
    cost = cost_of(view, None, shipped_prices(), "claude-sonnet-4-5", None, "anthropic")
    assert cost["cache_write_tokens"] == written
    assert view.prefix.write_lifetime == (ttl or "5m")
    by_hand = (Decimal(view.sent_tokens - written) * Decimal("3.00") + Decimal(written) * Decimal(write_price)) / 10**6
    assert Decimal(repr(cost["paid"])) == by_hand


def test_a_table_in_another_currency_is_refused_not_shown_as_dollars():
    # every amount is shown as $ and stored as "USD per 1M tokens", and added to the shipped dollar prices
    with pytest.raises(PriceTableError) as caught:
        parse_price_table('date = 2026-12-01\ncurrency = "EUR"\n[models.m]\ninput = 1\noutput = 1\n', "user prices")
    assert "currency" in str(caught.value) and "USD" in str(caught.value)
    assert parse_price_table('date = 2026-12-01\ncurrency = "USD"\n', "user prices").models == {}


def test_a_dated_snapshot_priced_apart_from_its_family_is_not_priced_as_the_family():
    # gpt-4o-2024-05-13, the first GPT-4o snapshot, costs $5 in / $15 out with no cached price; the date-suffix
    # fallback priced it as gpt-4o ($2.50 / $10), half of what it costs. Later snapshots are gpt-4o's price.
    table = shipped_prices()
    first = table.lookup("gpt-4o-2024-05-13")
    assert (first.input, first.output, first.cached_input) == (Decimal("5.0"), Decimal("15.0"), Decimal("5.0"))
    assert table.lookup("gpt-4o-2024-08-06").input == Decimal("2.5")


@pytest.mark.parametrize("text, needle", [
    ('[models."GPT-4o"]\ninput = 1\noutput = 1\n[models."gpt-4o"]\ninput = 2\noutput = 2\n', "gpt-4o"),
    ('[models.a]\ninput = 1\noutput = 1\naliases = ["x"]\n[models.b]\ninput = 2\noutput = 2\naliases = ["X"]\n',
     "x"),
    ('[models.a]\ninput = 1\noutput = 1\naliases = ["b"]\n[models.b]\ninput = 2\noutput = 2\n', "b"),
])
def test_a_table_naming_one_model_twice_is_refused_not_resolved_silently(text, needle):
    # names are matched without case: which of the two prices would be used was an accident of order
    with pytest.raises(PriceTableError) as caught:
        parse_price_table("date = 2026-12-01\n" + text, "prices.toml")
    message = str(caught.value)
    assert "twice" in message and needle in message.lower() and "\n" not in message


def test_a_users_alias_of_a_shipped_name_prices_that_name_as_the_users_model():
    """A user's `aliases = ["gpt-4o"]` under their own model: gpt-4o (and the shipped names that stand for it) are
    priced as theirs; the shipped price of gpt-4o no longer wins without a word."""
    shipped = shipped_prices()
    assert shipped.lookup("gpt-4o") is not None and shipped.lookup("gpt-4o").input != Decimal("0.5")
    mine = parse_price_table("date = 2026-12-05\n[models.my-gpt]\ninput = 0.5\noutput = 1\n"
                             "aliases = [\"gpt-4o\"]\n", "mine.toml")
    merged = shipped.merged(mine)
    for name in ("gpt-4o", "openai/gpt-4o", "gpt-4o-2024-08-06", "my-gpt"):
        assert (merged.lookup(name).model, merged.lookup(name).input) == ("my-gpt", Decimal("0.5")), name
    assert merged.lookup("gpt-4o-mini").model != "my-gpt"
