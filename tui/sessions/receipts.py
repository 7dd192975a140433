"""What a request record keeps of the window check, sent against received, and cost.

The app calls `record_fit` when it sends and `settle` when the reply (or a refusal) is in; both
take engine figures (tui/context/fit/window.py, received.py, costs.py), so this layer needs no client.
Records are bounded like the rest of the session file: long lists and texts are cut here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tui.context.json_types import JSONObject
from tui.context.policy.truncation import cost_series
from tui.context.pricing.costs import RequestTokens, add_totals, request_cost, reusable
from tui.context.pricing.prices import PriceTable
from tui.context.fit.received import Receipt, Reported
from tui.context.fit.usage_checks import within_request
from tui.context.fit.window import FitCheck
from tui.errors import one_line

from tui.sessions.model import RequestRecord, Session

if TYPE_CHECKING:
    from tui.context.request import RequestView

MAX_AFFECTED = 200  # messages named in one record
MAX_NOTES = 20
MAX_NOTE = 4000  # characters of one text


def _cut(text: str) -> str:
    return text if len(text) <= MAX_NOTE else text[: MAX_NOTE - 1] + "…"


def record_fit(record: RequestRecord, fit: FitCheck) -> None:
    data = fit.to_dict()
    record.fit = {**data, "consequence": _cut(data["consequence"]), "message": _cut(data["message"])}


def received_record(receipt: Receipt) -> JSONObject:
    data = receipt.to_dict()
    for key in ("where_basis", "who", "who_detail", "summary"):
        data[key] = _cut(data[key])
    data["notes"] = [_cut(note) for note in data["notes"][:MAX_NOTES]]
    data["affected"] = data["affected"][:MAX_AFFECTED]
    return data


def previous_cost(session: Session, record: RequestRecord) -> JSONObject | None:
    """The cost of the request before `record` in the session (its running totals go on from there)."""
    index = next((i for i, r in enumerate(session.requests) if r is record), len(session.requests))
    earlier = [r.cost for r in session.requests[:index] if r.cost]
    return earlier[-1] if earlier else None


def request_tokens(view: "RequestView", reported: Reported | None, previous: JSONObject | None,
                   rule: str) -> RequestTokens:
    """The tokens to price: the server's figures where it gave them, else ctxpane's count and prediction.

    A refused request processed nothing. What a cache could have reused is the previous request's
    prompt (this conversation kept whole would start with it) under the provider's cache rule.
    """
    if reported is not None and reported.refused:
        return RequestTokens(0, keep_all_tokens=view.keep_all_tokens, cached_from="reported")
    received = reported.received()[0] if reported else None
    reused = reported.reused() if reported else None
    tokens = received if received is not None else view.sent_tokens
    earlier_in = previous.get("input_tokens") if previous else None
    earlier_all = previous.get("keep_all_tokens") if previous else None
    written = view.prefix.write if reused is None else 0  # predicted writes (marked prefixes), before a reply
    if reported is not None and reported.cache_written is not None:  # the provider's own figure, where it gives one
        written = reported.cache_written
    return RequestTokens(tokens, reused if reused is not None else view.prefix.predicted_cached, written,
                         (reported.completion_tokens or 0) if reported else 0, reusable(rule, earlier_in, tokens),
                         view.keep_all_tokens, reusable(rule, earlier_all, view.keep_all_tokens),
                         "reported" if reused is not None else "predicted",
                         longer_write(rule, view.prefix.write_lifetime) if written else None)


def longer_write(rule: str, lifetime: str) -> float | None:
    """The write price's multiple of input for a lifetime longer than the table's own (Anthropic's 1-hour
    writes: 2x, where cache_write is the 5-minute 1.25x); None: the table's cache_write price applies."""
    from tui.context.cache.rules import RULES
    lifetimes = RULES[rule].lifetimes if rule in RULES else ()
    multiples = [life.write_multiplier for life in lifetimes if life.write_multiplier]
    chosen = next((life.write_multiplier for life in lifetimes if life.label == lifetime), None)
    return chosen if chosen and multiples and chosen != min(multiples) else None


def cost_of(view: "RequestView", reported: Reported | None, prices: PriceTable, model: str,
            previous: JSONObject | None, rule: str) -> JSONObject:
    """One request's cost record with the running totals: the same figures `render --json` prints."""
    tokens = request_tokens(view, reported, previous, rule)
    return add_totals(request_cost(tokens, prices.lookup(model), model), previous)


def settle(record: RequestRecord, session: Session, view: "RequestView", reported: Reported | None,
           receipt: Receipt | None, prices: PriceTable, rule: str = "llama.cpp") -> None:
    """Fill `record` once its request is over: sent against received, and what it cost."""
    if reported is not None:  # a count no server could make of this request is a claim, never priced
        window = receipt.window.tokens if receipt is not None and receipt.window is not None else None
        reported = within_request(reported, view.sent_tokens, window)
        if receipt is not None:
            receipt.unreported += [line for line in reported.unreported if line not in receipt.unreported]
    record.received = received_record(receipt) if receipt is not None else None
    model = (record.reply or {}).get("model") or session.model
    record.cost = cost_of(view, reported, prices, model, previous_cost(session, record), rule)


def received_line(received: JSONObject | None) -> str:
    """What the server did with the request, as recorded: " · server …" (nothing for older records); plain text
    for the CLI's replay and the app's replay screen."""
    if not received:
        return ""
    verdict = received.get("verdict")
    if verdict == "match":
        text = f"server processed {received.get('received')} = sent"
    elif verdict == "dropped" and not received.get("where"):  # only the server's truncated flag says so
        text = "SERVER SAYS IT CUT the prompt (truncated = true), with no count of what it dropped"
    elif verdict == "dropped":
        lost = [a.get("message_id", "?") for a in received.get("affected") or []]
        text = (f"SERVER DROPPED ~{-received.get('difference', 0)} tokens from the {received.get('where') or '?'}"
                f" ({', '.join(lost[:5]) or 'no message'}{', …' if len(lost) > 5 else ''}) by {received.get('who')}")
    elif verdict == "added":
        text = f"server processed {received.get('difference')} tokens more than sent"
    elif verdict == "refused":
        text = "server refused it (over its window)"
    elif received.get("received") is not None:
        text = (f"server processed {received.get('received')}, ctxpane estimated {received.get('sent')}: "
                "an estimate cannot tell that from a cut")
    else:
        text = "server reported no prompt count"
    flags = [flag for flag, key in (("reply cut at the window", "reply_cut"), ("context shifted", "shifted"))
             if received.get(key)]
    return " · " + one_line(text + "".join(f", {flag}" for flag in flags), 300)


def cost_line(cost: JSONObject | None) -> str:
    """What the request cost, as recorded: " · cost $…" (nothing for older records)."""
    if not cost:
        return ""
    if not cost.get("priced"):
        return " · " + one_line(f"cost: tokens only (no price for {cost.get('model') or 'this model'})", 200)
    paid, total = cost.get("paid"), (cost.get("cumulative") or {}).get("paid")
    if paid is None:  # a record (from a file) priced but with no amount
        return " · cost: no amount recorded"
    return f" · cost ${paid:.6f}" + (f" (so far ${total:.6f})" if total is not None else "")


def fit_line(fit: JSONObject | None) -> str:
    """The check made before sending, when the request did not fit: " · before sending: …"."""
    if not fit or fit.get("fits") is not False:
        return ""
    return " · " + one_line(f"before sending: {fit.get('message') or 'it did not fit the window'}", 300)


def request_series(requests: list[RequestRecord]) -> list[JSONObject]:
    """The Cost tab's per-request rows for recorded requests: sent, and what keep-all would have sent."""
    rows = cost_series([(r.document_tokens, r.keep_all_tokens or r.document_tokens) for r in requests])
    return [{**row} for row in rows]  # plain dicts: the controller hands them on as JSON objects
