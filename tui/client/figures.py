"""The server's own figures for a request, taken from its reply (or its refusal) for the engine to compare.

The reply's usage and timings were checked against `schemas` when they arrived; what is read here
is read again leniently anyway (a figure of the wrong shape is unknown, never an error), so a
record from an older or odd server still gives what it can.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tui.context.fit.received import Receipt, Reported, compare_view
from tui.context.fit.usage_checks import checked_figure, consistent, figure_problem
from tui.context.fit.window import WindowSize
from tui.context.json_types import JSONObject

from tui.client.errors import ClientError, ContextOverflow
from tui.client.reply import Reply
from tui.client.schemas import MAX_COUNT, lenient_count

if TYPE_CHECKING:
    from tui.context.request import RequestView

    from tui.client.server_info import ServerInfo


def _details(usage: JSONObject) -> JSONObject:
    details = usage.get("prompt_tokens_details")
    return details if isinstance(details, dict) else {}


def _written(usage: JSONObject) -> object:
    """Tokens the provider says it wrote to its cache: OpenAI's cache_write_tokens (GPT-5.6 on), or Anthropic's
    cache_creation_input_tokens as a gateway passes it on."""
    found = _details(usage).get("cache_write_tokens")
    return found if found is not None else usage.get("cache_creation_input_tokens")


def usage_figures(usage: JSONObject) -> tuple[dict[str, int | None], dict[str, str]]:
    """The usage figures the engine reads, each checked (`usage_checks`): the counts, and why any was not used."""
    raw = {"usage.prompt_tokens": usage.get("prompt_tokens"), "usage.completion_tokens": usage.get("completion_tokens"),
           "usage.prompt_tokens_details.cached_tokens": _details(usage).get("cached_tokens"),
           "cache write tokens": _written(usage)}
    problems = {name: problem for name, value in raw.items() if (problem := figure_problem(value))}
    return {name: checked_figure(value) for name, value in raw.items()}, problems


def reported_from_reply(reply: Reply) -> Reported:
    """The server's figures for the engine: usage checked against bounds and against each other here, where
    they enter; a figure that fails is None (not used in a cost) with its reason in `unreported`."""
    usage: Any = reply.usage if isinstance(reply.usage, dict) else {}
    counts, problems = usage_figures(usage)
    timings: Any = reply.timings if isinstance(reply.timings, dict) else {}
    prompt_n, cache_n = lenient_count(timings.get("prompt_n")), lenient_count(timings.get("cache_n"))
    if prompt_n is not None and cache_n is not None and prompt_n + cache_n > MAX_COUNT:  # their sum is a count too
        prompt_n = cache_n = None
    return consistent(Reported(
        prompt_tokens=counts["usage.prompt_tokens"],
        prompt_n=prompt_n,
        cache_n=cache_n,
        cached_tokens=counts["usage.prompt_tokens_details.cached_tokens"],
        cache_written=counts["cache write tokens"],
        prompt_eval_count=lenient_count(reply.prompt_eval_count),
        completion_tokens=counts["usage.completion_tokens"] if usage
        else lenient_count(timings.get("predicted_n")),
        truncated=reply.truncated if isinstance(reply.truncated, bool) else None,
        finish_reason=reply.finish_reason if isinstance(reply.finish_reason, str) else None), problems)


def reported_from_record(reply: JSONObject) -> Reported:
    """The same figures from a stored reply record (`Reply.to_record()`, as a session file holds it)."""
    rebuilt = Reply(usage=reply.get("usage"), timings=reply.get("timings"),
                    finish_reason=reply.get("finish_reason"),
                    truncated=reply.get("truncated") if isinstance(reply.get("truncated"), bool) else None,
                    prompt_eval_count=lenient_count(reply.get("prompt_eval_count")))
    return reported_from_reply(rebuilt)


def reported_from_error(error: ClientError) -> Reported | None:
    """A refusal for being over the window, with the server's count and window; None for other errors."""
    if not isinstance(error, ContextOverflow):
        return None
    return Reported(refused=True, error_prompt_tokens=lenient_count(error.n_prompt_tokens),
                    error_window=lenient_count(error.n_ctx) or None)


def receipt_after(view: RequestView, outcome: Reply | ClientError, info: ServerInfo | None, max_tokens: int = 0,
                  window: WindowSize | None = None) -> Receipt | None:
    """Sent against received once a request is over: `outcome` is its reply or the error it ended with.

    `window` is the window planned with (by default the server's own figure); None is returned for
    an error that says nothing about the prompt (a dropped connection, a refused key).
    """
    reported = reported_from_reply(outcome) if isinstance(outcome, Reply) else reported_from_error(outcome)
    if reported is None:
        return None
    kind = info.kind if info else ""
    return compare_view(view, reported, kind, window or (info.window if info else None), max_tokens,
                        info.build if info else "")
