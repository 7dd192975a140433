"""The server's own figures for a request, taken from its reply (or its refusal) for the engine to compare.

The reply's usage and timings were checked against `schemas` when they arrived; what is read here
is read again leniently anyway (a figure of the wrong shape is unknown, never an error), so a
record from an older or odd server still gives what it can.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tui.context.fit.received import Receipt, Reported, compare_view
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


def _written(usage: JSONObject) -> int | None:
    """Tokens the provider says it wrote to its cache: OpenAI's cache_write_tokens (GPT-5.6 on), or Anthropic's
    cache_creation_input_tokens as a gateway passes it on."""
    found = lenient_count(_details(usage).get("cache_write_tokens"))
    return found if found is not None else lenient_count(usage.get("cache_creation_input_tokens"))


def reported_from_reply(reply: Reply) -> Reported:
    usage: Any = reply.usage if isinstance(reply.usage, dict) else {}
    timings: Any = reply.timings if isinstance(reply.timings, dict) else {}
    prompt_n, cache_n = lenient_count(timings.get("prompt_n")), lenient_count(timings.get("cache_n"))
    if prompt_n is not None and cache_n is not None and prompt_n + cache_n > MAX_COUNT:  # their sum is a count too
        prompt_n = cache_n = None
    return Reported(
        prompt_tokens=lenient_count(usage.get("prompt_tokens")),
        prompt_n=prompt_n,
        cache_n=cache_n,
        cached_tokens=lenient_count(_details(usage).get("cached_tokens")),
        cache_written=_written(usage),
        prompt_eval_count=lenient_count(reply.prompt_eval_count),
        completion_tokens=lenient_count(usage.get("completion_tokens")) if usage
        else lenient_count(timings.get("predicted_n")),
        truncated=reply.truncated if isinstance(reply.truncated, bool) else None,
        finish_reason=reply.finish_reason if isinstance(reply.finish_reason, str) else None)


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
