"""Hostile usage figures from a server for a priced model: each is checked where it enters (bounds, and
consistency with the prompt count); one that fails is not used in a cost and is shown as not reported (reason)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from tui.app.pane.cost_amounts import money_text
from tui.client.figures import reported_from_reply
from tui.client.reply import reply_from_response
from tui.client.schemas import Chunk, decode
from tui.context.pricing.costs import request_cost
from tui.context.pricing.prices import ModelPrice
from decimal import Decimal


def reply_with(usage: dict):
    body = {"model": "gpt-4o", "choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}], "usage": usage}
    return reply_from_response(decode(json.dumps(body).replace("NaN_", "NaN"), Chunk, "a completion"))


@pytest.mark.parametrize(("usage", "field", "reason"), [
    ({"prompt_tokens": -5, "completion_tokens": 3}, "usage.prompt_tokens", "negative"),
    ({"prompt_tokens": "NaN_", "completion_tokens": 3}, "usage.prompt_tokens", "not a number"),
    ({"prompt_tokens": 12.5, "completion_tokens": 3}, "usage.prompt_tokens", "not a whole number"),
    ({"prompt_tokens": 10, "completion_tokens": 10**11}, "usage.completion_tokens", "past any model's window"),
    ({"prompt_tokens": 100, "prompt_tokens_details": {"cached_tokens": 900}},
     "usage.prompt_tokens_details.cached_tokens", "over the 100 prompt tokens"),
    ({"prompt_tokens": 100, "prompt_tokens_details": {"cached_tokens": 60, "cache_write_tokens": 50}},
     "cache write tokens", "over the 100 prompt tokens"),
])
def test_a_hostile_figure_is_not_used_and_says_why(usage, field, reason):
    reported = reported_from_reply(reply_with(usage))  # before: a MalformedAnswer for the whole reply, or used
    name = field.rsplit(".", 1)[-1]
    attribute = {"cached_tokens": "cached_tokens", "cache write tokens": "cache_written"}.get(name, name)
    assert getattr(reported, attribute) is None
    assert any(line.startswith(f"{field}: not reported (") and reason in line for line in reported.unreported)


def test_sane_figures_pass_unchanged():
    reported = reported_from_reply(reply_with({"prompt_tokens": 100, "completion_tokens": 7,
                                               "prompt_tokens_details": {"cached_tokens": 64}}))
    assert (reported.prompt_tokens, reported.completion_tokens, reported.cached_tokens) == (100, 7, 64)
    assert reported.unreported == ()


def test_the_cost_tab_shows_a_figure_not_reported_and_prices_without_it():
    from tui.sessions.receipts import request_tokens
    reported = reported_from_reply(reply_with({"prompt_tokens": 100, "completion_tokens": 5,
                                               "prompt_tokens_details": {"cached_tokens": 10**9}}))
    view = SimpleNamespace(sent_tokens=100, keep_all_tokens=100,
                           prefix=SimpleNamespace(write=0, predicted_cached=0, write_lifetime=""))
    tokens = request_tokens(view, reported, None, "openai")
    assert tokens.cached_from == "predicted" and tokens.cached_tokens == 0  # the server's figure is not in it
    price = ModelPrice("gpt-4o", Decimal("2.5"), Decimal("10"), Decimal("1.25"), Decimal("2.5"), "test", "2025-01-01",
                       "test")
    cost = request_cost(tokens, price, "gpt-4o")
    assert cost["saved_by_cache"] == 0
    record = SimpleNamespace(cost={**cost, "cumulative": {}}, received={"unreported": list(reported.unreported)})
    shown = money_text([record], {}).plain
    assert "usage.prompt_tokens_details.cached_tokens: not reported (1,000,000,000 is past any model's window" in shown


def test_a_count_past_a_window_hint_smaller_than_the_request_is_still_believed():
    """A hosted model's registry window (200k) under a request of 300k that the provider served (its 1M mode): the
    count of 300k and its cached tokens are used; a count past any reading of the request is not."""
    from tui.context.fit.received import Reported
    from tui.context.fit.usage_checks import within_request
    served = within_request(Reported(prompt_tokens=300_000, cached_tokens=290_000), 300_000, 200_000)
    assert (served.prompt_tokens, served.cached_tokens, served.unreported) == (300_000, 290_000, ())
    claimed = within_request(Reported(prompt_tokens=250_000, cached_tokens=10), 1_000, 200_000)
    assert claimed.prompt_tokens is None and claimed.cached_tokens is None
    assert claimed.unreported == ("usage.prompt_tokens: not reported (250,000 is past the server's window of "
                                  "200,000)",)


@pytest.mark.parametrize("usage", [
    {"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": -3}},
    {"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": 10**18}},
    {"prompt_tokens": 10.7, "completion_tokens": "3"},
    {"prompt_tokens": 10, "total_tokens": 2**70},
    {"prompt_tokens": 10, "completion_tokens": True, "cost": float("inf"), "deep": {"a": {"b": {"c": {"d": 1}}}}},
], ids=["negative cached", "huge cached", "float and text", "past 2**63", "bool, infinity, deep"])
def test_a_session_holding_a_reply_with_lying_figures_opens_with_them_left_out_and_said(tmp_path, usage):
    """A lying usage object was kept as the server sent it, and the session file refused to open: every turn of the
    conversation lost (in the tap's recordings and the app's own sessions alike)."""
    from tui.client.reply import Reply
    from tui.sessions.model import RequestRecord, Session
    from tui.sessions.store import load_session, save_session
    reply = Reply(content="ok", usage=usage)
    record = RequestRecord(number=1, time="2026-12-04T00:00:00Z", body={"model": "m", "messages": [
        {"role": "user", "content": "hi"}]}, reply=reply.to_record())
    record.usage, record.cached_reported = record.reply["usage"], reply.cached_tokens
    path = tmp_path / "s.ctxpane.json"
    save_session(Session(title="lying figures", requests=[record]), path)
    loaded = load_session(path).session.requests[0]
    assert loaded.reply["content"] == "ok" and loaded.reply["figures_left_out"]
    assert loaded.reply["usage"].get("prompt_tokens") in (10, None)
