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


JSON_INT = 2**63  # msgspec (and so every session file) reads no integer past this
KEPT_DEPTH = 4  # levels of a usage object's own fields kept


def recordable_usage(usage: object) -> tuple[dict[str, object] | None, list[str]]:
    """A server's usage object as a session record may keep it: every token figure a count (figure_problem), every
    other value JSON a file reads back (integers within 2**63, finite numbers, bounded depth); what is left out comes
    back as lines saying why. A lying figure once made the whole session file unreadable."""
    if not isinstance(usage, dict):
        return None, []
    dropped: list[str] = []
    kept = _kept_object(usage, "usage", 0, dropped)
    return kept, dropped


def _kept_object(value: dict[str, object], where: str, depth: int, dropped: list[str]) -> dict[str, object]:
    kept: dict[str, object] = {}
    for key, item in value.items():
        name = f"{where}.{str(key)[:60]}"
        if depth >= KEPT_DEPTH:
            dropped.append(f"{name}: nested too deep to keep")
            continue
        if isinstance(item, dict):
            kept[str(key)] = _kept_object(item, name, depth + 1, dropped)
            continue
        if isinstance(item, bool) or not isinstance(item, (int, float)):  # a count's field holds a number or nothing
            problem = f"not a number ({type(item).__name__})" if _counted(str(key)) and item is not None else ""
        else:
            problem = _number_problem(str(key), item)
        if problem:
            dropped.append(f"{name}: {problem}")
        elif item is None or isinstance(item, (str, bool, int, float)):
            kept[str(key)] = item[:1000] if isinstance(item, str) else item
        elif isinstance(item, list) and all(isinstance(x, (str, bool)) or x is None for x in item[:100]):
            kept[str(key)] = item[:100]
        else:
            dropped.append(f"{name}: not a figure ({type(item).__name__})")
    return kept


def _number_problem(key: str, value: int | float) -> str:
    """A token count is checked as one (figure_problem); any other number (a gateway's cost) only for JSON."""
    if _counted(key):
        return figure_problem(value)
    if isinstance(value, float) and not math.isfinite(value):
        return f"not a number ({value})"
    if isinstance(value, int) and abs(value) >= JSON_INT:
        return "an integer past what JSON files hold (2**63)"
    return ""


def _counted(key: str) -> bool:
    """A field that holds a token count (prompt_tokens, cache_n, …): a session file reads it as one."""
    return "token" in key.lower() or key.endswith("_n")
