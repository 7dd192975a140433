"""The server's usage figures, checked where they enter the engine: in bounds, and consistent with each other.

A figure that fails (negative, not a whole number, past any window, more cached or written than the prompt
holds) is taken out, so no cost and no comparison uses it, and the reason is kept: the Cost tab and the
request record say "not reported (reason)" for it.
"""

from __future__ import annotations

import math
from dataclasses import replace

from tui.context.fit.received import Reported

USAGE_LIMIT = 100_000_000  # tokens: no model's window is larger (the client's bound on a server's window too)


def figure_problem(value: object) -> str:
    """Why a raw usage figure is not a token count ('' when it is one, or absent)."""
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"not a number ({type(value).__name__})"
    if isinstance(value, float) and not math.isfinite(value):
        return f"not a number ({value})"
    if value < 0:
        return f"negative ({value:g})"
    if value != int(value) or isinstance(value, float) and value > 2**53:
        return f"not a whole number ({value:g})"
    if value > USAGE_LIMIT:
        return f"{int(value):,} is past any model's window ({USAGE_LIMIT:,})"
    return ""


def checked_figure(value: object) -> int | None:
    """The figure as a count when `figure_problem` finds nothing, else None."""
    return int(value) if value is not None and not figure_problem(value) and isinstance(value, (int, float)) else None


def consistent(reported: Reported, problems: dict[str, str]) -> Reported:
    """`reported` with the figures that contradict the prompt count taken out; `problems` says why, by field."""
    prompt = reported.prompt_tokens
    if prompt is None:
        return _with_reasons(reported, problems)
    cached, written = reported.cached_tokens, reported.cache_written
    if cached is not None and cached > prompt:
        problems["usage.prompt_tokens_details.cached_tokens"] = f"{cached:,} cached, over the {prompt:,} prompt tokens"
        reported, cached = replace(reported, cached_tokens=None), None
    if written is not None and written + (cached or 0) > prompt:
        problems["cache write tokens"] = (f"{written:,} written (+ {cached or 0:,} cached), over the {prompt:,} "
                                          "prompt tokens")
        reported = replace(reported, cache_written=None)
    return _with_reasons(reported, problems)


def _with_reasons(reported: Reported, problems: dict[str, str]) -> Reported:
    lines = tuple(f"{field}: not reported ({reason})" for field, reason in problems.items())
    return replace(reported, unreported=reported.unreported + lines) if lines else reported


CLAIM_FACTOR = 100  # a prompt counted at more than this many times what was sent (plus CLAIM_SLACK) is not believed
CLAIM_SLACK = 100_000  # tokens: room for images, a gateway's own system prompt, retrieval it adds


def within_request(reported: Reported, sent: int, window_tokens: int | None) -> Reported:
    """`reported` without a prompt count no server could have made of this request: past the server's window, or
    past any reading of what was sent; such a claim is kept as a reason (the receipt still shows it), never priced."""
    prompt = reported.prompt_tokens
    if prompt is None:
        return reported
    if window_tokens and window_tokens >= sent:  # (a window smaller than what went through is a wrong hint)
        bound, what = window_tokens + max(8, window_tokens // 100), f"the server's window of {window_tokens:,}"
    else:
        bound, what = sent * CLAIM_FACTOR + CLAIM_SLACK, f"what a request of {sent:,} tokens could be counted as"
    if prompt <= bound:
        return reported
    problems = {"usage.prompt_tokens": f"{prompt:,} is past {what}"}
    return _with_reasons(replace(reported, prompt_tokens=None, cached_tokens=None, cache_written=None), problems)
