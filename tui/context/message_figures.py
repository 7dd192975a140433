"""Per message, the figures the transcript shows under its header: its tokens in the request, and for a reply how
it came (time to first token, tokens per second, the cached share of the prompt that produced it).

The tokens are the per-turn accounting every other view reads (hidden_tokens); a reply's figures come from its
request record, read by the caller into `ReplyFacts` (the server's word, and ctxpane's own clock).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable

from tui.context.fit.received import Reported

if TYPE_CHECKING:
    from tui.context.request import RequestView


@dataclass(frozen=True)
class ReplyFacts:
    """What one request's record says of the reply it brought."""

    reply_id: str
    reported: Reported
    first_token_ms: int | None = None
    elapsed_ms: int | None = None
    server_per_second: float | None = None  # the server's own rate (llama.cpp's timings.predicted_per_second)


@dataclass(frozen=True)
class MessageFigures:
    tokens: int | None = None  # in the request as it stands (None: not sent, dropped by the policy)
    exact: bool = False  # counted with the model's own tokenizer (else an estimate, shown with ~)
    generated: int | None = None
    first_token_s: float | None = None
    per_second: float | None = None
    cached_share: float | None = None  # of the prompt the reply was generated from, as the server reported it

    def line(self) -> str:
        parts = []
        if self.tokens is not None:
            parts.append(f"{'' if self.exact else '~'}{self.tokens:,} tok")
        if self.generated is not None:
            parts.append(f"{self.generated:,} generated")
        if self.first_token_s is not None:
            parts.append(f"first token {self.first_token_s:.2f} s")
        if self.per_second is not None:
            parts.append(f"{self.per_second:.1f} tok/s")
        if self.cached_share is not None:
            parts.append(f"{self.cached_share:.0%} cached")
        return " · ".join(parts)


def message_figures(view: "RequestView | None", replies: Iterable[ReplyFacts]) -> dict[str, MessageFigures]:
    """Figures by message id: every message in the request, and every reply a record names."""
    tokens: dict[str, int] = {}
    exact = bool(view is not None and view.snapshot.counts.exact)
    for turn in view.hidden.turns if view is not None else ():
        if turn.message_id and turn.turn >= 0:
            tokens[turn.message_id] = tokens.get(turn.message_id, 0) + turn.total
    figures = {ident: MessageFigures(count, exact) for ident, count in tokens.items()}
    for facts in replies:
        if facts.reply_id:
            figures[facts.reply_id] = _reply(facts, tokens.get(facts.reply_id), exact)
    return figures


def _reply(facts: ReplyFacts, tokens: int | None, exact: bool) -> MessageFigures:
    generated = facts.reported.completion_tokens
    first = facts.first_token_ms / 1000 if facts.first_token_ms is not None else None
    return MessageFigures(tokens, exact, generated, first, _rate(facts, generated), _cached_share(facts.reported))


def _rate(facts: ReplyFacts, generated: int | None) -> float | None:
    """The server's own rate if it gave one; else generated tokens over the time from the first to the last."""
    if facts.server_per_second is not None and facts.server_per_second > 0:
        return facts.server_per_second
    if generated is None or facts.first_token_ms is None or facts.elapsed_ms is None:
        return None
    streaming_ms = facts.elapsed_ms - facts.first_token_ms  # the first token arrived at its start: the rest in it
    return (generated - 1) / (streaming_ms / 1000) if streaming_ms > 0 and generated > 1 else None


def _cached_share(reported: Reported) -> float | None:
    received, _field = reported.received()
    reused = reported.reused()
    if not received or reused is None:
        return None
    return min(1.0, reused / received)
