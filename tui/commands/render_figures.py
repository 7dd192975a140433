"""The window, fit and cost figures `ctxpane render` prints: the same a session's request records carry.

Before a request is sent there is no server answer: the cost counts the prompt as ctxpane counts it,
the cached tokens as the engine predicts them, and no reply. For a session file, the costs its
requests recorded are printed too, with their running totals and the keep-all curve.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from tui.commands.inputs import Conversation
from tui.context.policy.truncation import PolicySettings
from tui.context.pricing.costs import curve
from tui.context.pricing.prices import PriceTable, PriceTableError
from tui.context.request import RequestView
from tui.context.fit.window import WindowSize, fit_check
from tui.errors import UsageError
from tui.sessions.price_files import load_prices, read_prices, shipped_prices
from tui.sessions.receipts import cost_of


def price_table(args: argparse.Namespace) -> tuple[PriceTable, list[str]]:
    """--prices FILE over the shipped table (a bad file is an error), else the config folder's (a warning)."""
    if not args.prices:
        return load_prices()
    try:
        return shipped_prices().merged(read_prices(Path(args.prices))), []
    except PriceTableError as exc:
        raise UsageError(str(exc)) from None


def planned_window(args: argparse.Namespace, policy: PolicySettings) -> WindowSize | None:
    """The window render plans with: the policy's context window, a setting (no server is asked)."""
    if policy.context_window is None:
        return None
    detail = "--context" if args.context is not None else "the session's policy"
    return WindowSize(policy.context_window, "config", detail)


def figures(args: argparse.Namespace, conversation: Conversation, view: RequestView, policy: PolicySettings,
            previous: RequestView | None = None) -> tuple[dict, list[str]]:
    """{"window", "fit", "cost", "session_cost"} for `render --json`, and warnings met on the way."""
    prices, problems = price_table(args)
    session = conversation.session
    model = args.model or conversation.model
    records = [r.cost for r in session.requests if r.cost] if session else []
    before = records[-1] if records else (
        {"input_tokens": previous.sent_tokens, "keep_all_tokens": previous.keep_all_tokens} if previous else None)
    window = planned_window(args, policy)
    data = {"window": window.to_dict() if window else None,
            "fit": fit_check(view.sent_tokens, policy.max_tokens, window).to_dict(),
            "cost": cost_of(view, None, prices, model, before, view.prefix.rule)}  # the rule the prediction was made with
    if session is not None:
        data["session_cost"] = {"requests": records, "curve": curve(records)}
    return data, problems
