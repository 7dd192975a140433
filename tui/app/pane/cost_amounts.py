"""Cost tab, money part: per request and cumulative (paid, saved by the cache, lost to cache breaks) from each
request record's cost, and the curve of keep-all against the policy drawn as text rows."""

from __future__ import annotations

from rich.text import Text

from tui.context.pricing.costs import curve

from tui.app.shown import one_line

BAR = 24  # cells of the widest curve bar


def dollars(value: float | None) -> str:
    return "—" if value is None else f"${value:,.6f}"  # a short request costs thousandths of a cent


def recorded_costs(requests) -> list[dict]:
    return [record.cost for record in requests if getattr(record, "cost", None)]


def unreported(requests, cost: dict) -> list[str]:
    """The server's figures not used in `cost`, each "field: not reported (reason)" (its request's received record)."""
    record = next((r for r in requests if getattr(r, "cost", None) is cost), None)
    received = getattr(record, "received", None) or {}
    lines = received.get("unreported") if isinstance(received, dict) else None
    return [line for line in lines[:8] if isinstance(line, str)] if isinstance(lines, list) else []


def money_text(requests, roles: dict[str, str]) -> Text:
    """Money per request and so far, or tokens only when the model has no price; empty before the first reply."""
    costs = recorded_costs(requests)
    if not costs:
        return Text()
    last = costs[-1]
    total = last.get("cumulative") or {}  # a record from a file may have no running totals
    if not last.get("priced"):
        return Text("\n" + one_line(f"model {last.get('model') or '?'} has no price: tokens only "
                             f"({total.get('input_tokens', '?')} input, {total.get('output_tokens', '?')} "
                             "output so far)", 300), style="dim")
    out = Text("\n\n" + one_line(f"money ({last.get('model')}, per request)", 200) + "\n", style="bold")
    for number, cost in enumerate(costs[-20:], start=max(1, len(costs) - 19)):
        out.append(f"#{number:<3} paid {dollars(cost.get('paid'))}  saved by cache "
                   f"{dollars(cost.get('saved_by_cache'))}  lost to cache breaks "
                   f"{dollars(cost.get('lost_to_cache_break'))}  ({cost['input_tokens']} in, "
                   f"{cost['cached_tokens']} cached, {cost['output_tokens']} out)\n")
        for line in unreported(requests, cost):
            out.append("     " + one_line(line, 300) + "\n", style="dim")
    out.append(f"so far: paid {dollars(total.get('paid'))}, saved {dollars(total.get('saved_by_cache'))}, lost "
               f"{dollars(total.get('lost_to_cache_break'))}; keep-all would have paid "
               f"{dollars(total.get('keep_all_paid'))}\n", style="bold")
    return out + curve_rows(costs, roles)


def curve_rows(costs: list[dict], roles: dict[str, str]) -> Text:
    """Cumulative paid under the policy against keep-all: keep-all's re-sending grows quadratically."""
    points = curve(costs)[-20:]
    if not points:  # records (from a file) without running totals
        return Text()
    top = max((p["keep_all_paid_total"] or 0) for p in points) or 1
    out = Text("\ncumulative paid: ", style="bold")
    out.append("■ policy", style=roles.get("assistant", "cyan"))
    out.append("  ■ keep-all\n", style=roles.get("dropped", "grey50"))
    for point in points:
        policy, keep_all = point["paid_total"] or 0, point["keep_all_paid_total"] or 0
        out.append(f"#{point['request']:<3} ")
        out.append("█" * max(1, round(BAR * policy / top)), style=roles.get("assistant", "cyan"))
        out.append(f" {dollars(policy)}\n     ")
        out.append("█" * max(1, round(BAR * keep_all / top)), style=roles.get("dropped", "grey50"))
        out.append(f" {dollars(keep_all)}\n")
    return out
