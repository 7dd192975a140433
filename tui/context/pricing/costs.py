"""What requests cost, from token counts and a price (tui/context/pricing/prices.py): pure arithmetic.

Per request: what was paid, what the cache saved (cached tokens at the input price less the cached
price), what cache breaks lost (tokens the cache could have served, had the prompt kept the previous
request as its prefix, but did not), and what keep-all would have cost (everything re-sent, with and
without the cache). Running totals make the curves: keep-all grows with the square of the number of
turns (each request re-sends all earlier ones), a fixed budget in a straight line.
A model without a price gets the same token figures and None for every amount.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import TypedDict

from tui.context.cache.prefix import predict_cached
from tui.context.json_types import JSONObject
from tui.context.pricing.prices import ModelPrice

MILLION = Decimal(1_000_000)
MONEY = ("paid", "saved_by_cache", "lost_to_cache_break", "keep_all_paid", "keep_all_cached_paid")
TOKENS = ("input_tokens", "cached_tokens", "cache_write_tokens", "output_tokens", "lost_tokens", "keep_all_tokens")


@dataclass(frozen=True)
class RequestTokens:
    """One request's tokens, as the server reported them where it did (else as ctxpane counted them)."""

    input_tokens: int  # prompt tokens, cached ones included
    cached_tokens: int = 0  # read from the provider's cache
    cache_write_tokens: int = 0  # written to it (providers that bill writes)
    output_tokens: int = 0  # 0 before the reply
    reusable_tokens: int = 0  # what the cache could have served: the previous prompt, under the cache rule
    keep_all_tokens: int = 0  # what keep-all would have sent
    keep_all_reusable: int = 0  # what the cache would have served keep-all (its previous request is a prefix)
    cached_from: str = "reported"  # or "predicted" (the engine's cache prediction, before the reply)
    write_multiplier: float | None = None  # writes priced at this multiple of input (a 1-hour write: 2x), not
    #                                        at the table's cache_write price (the 5-minute one)


def reusable(rule: str, previous_tokens: int | None, tokens: int) -> int:
    """Tokens a cache could serve when the previous prompt (`previous_tokens`) is a prefix of this one."""
    return 0 if not previous_tokens else predict_cached(rule, previous_tokens, tokens)


def _usd(tokens: int, price: Decimal) -> Decimal:
    return Decimal(tokens) * price / MILLION


def amounts(t: RequestTokens, price: ModelPrice) -> dict[str, Decimal]:
    cached = min(t.cached_tokens, t.input_tokens)
    written = min(t.cache_write_tokens, t.input_tokens - cached)
    write_price = price.input * Decimal(str(t.write_multiplier)) if t.write_multiplier else price.cache_write
    fresh = t.input_tokens - cached - written
    discount = price.input - price.cached_input
    output = _usd(t.output_tokens, price.output)
    keep_all_cached = min(t.keep_all_reusable, t.keep_all_tokens)
    return {
        "paid": _usd(fresh, price.input) + _usd(cached, price.cached_input) + _usd(written, write_price)
        + output,
        "saved_by_cache": _usd(cached, discount),
        "lost_to_cache_break": _usd(max(0, t.reusable_tokens - cached), discount),
        "keep_all_paid": _usd(t.keep_all_tokens, price.input) + output,
        "keep_all_cached_paid": _usd(t.keep_all_tokens - keep_all_cached, price.input)
        + _usd(keep_all_cached, price.cached_input) + output,
    }


def money(value: Decimal | None) -> float | None:
    """An amount for JSON: dollars, rounded to a billionth of a cent's worth of precision (10 places)."""
    return None if value is None else float(round(value, 10))


def request_cost(t: RequestTokens, price: ModelPrice | None, model: str) -> JSONObject:
    """The cost record of one request (what `render --json` and a session's request record carry)."""
    figures = amounts(t, price) if price else dict.fromkeys(MONEY)
    cached = min(t.cached_tokens, t.input_tokens)  # a server's figure past its own prompt count is held to it
    return {"model": model, "priced": price is not None, "price": price.to_dict() if price else None,
            "input_tokens": t.input_tokens, "cached_tokens": cached, "cached_from": t.cached_from,
            "cache_write_tokens": t.cache_write_tokens, "output_tokens": t.output_tokens,
            "lost_tokens": max(0, t.reusable_tokens - cached), "keep_all_tokens": t.keep_all_tokens,
            **{key: money(value) for key, value in figures.items()}}


def add_totals(cost: JSONObject, previous: JSONObject | None) -> JSONObject:
    """`cost` with `cumulative`: the previous request's cumulative figures plus this one's.

    An amount is summed over priced requests only; `priced_requests` says how many those were.
    """
    before = (previous or {}).get("cumulative") or {}
    totals: JSONObject = {"requests": before.get("requests", 0) + 1,
                    "priced_requests": before.get("priced_requests", 0) + (1 if cost["priced"] else 0)}
    for key in TOKENS:
        totals[key] = before.get(key, 0) + (cost.get(key) or 0)
    for key in MONEY:
        earlier = Decimal(repr(before[key])) if before.get(key) is not None else None
        now = Decimal(repr(cost[key])) if cost.get(key) is not None else None
        totals[key] = money(earlier + now if earlier is not None and now is not None else earlier if now is None
                            else now)
    return {**cost, "cumulative": totals}


class CurvePoint(TypedDict):
    """One request's running totals (its cost record's `cumulative`): tokens sent and dollars paid, against
    keep-all."""

    request: int
    sent_total: int
    keep_all_total: int
    paid_total: float | None  # None: no request so far was priced
    keep_all_paid_total: float | None
    keep_all_cached_paid_total: float | None


def curve(costs: list[JSONObject]) -> list[CurvePoint]:
    """Per request, the running totals of what was sent and paid against keep-all: the curves to draw."""
    return [{"request": number, "sent_total": c["cumulative"]["input_tokens"],
             "keep_all_total": c["cumulative"]["keep_all_tokens"], "paid_total": c["cumulative"]["paid"],
             "keep_all_paid_total": c["cumulative"]["keep_all_paid"],
             "keep_all_cached_paid_total": c["cumulative"]["keep_all_cached_paid"]}
            for number, c in enumerate(costs, start=1) if c.get("cumulative")]
