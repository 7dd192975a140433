"""Earlier prompts a server may still hold, and how much of a new prompt each one covers.

A server caches what it computed: the prompt, then the tokens it generated. ctxpane knows the prompt
exactly (the rendered document). The generated part is known exactly only when the server said which
tokens it produced (`reply_pieces`, from logprobs); otherwise the reply's text stands in for it, which
is right when the template writes the reply back as it was generated, and is flagged as an assumption.
A reply with reasoning or tool calls is written back differently, so its tokens count as unknown.
"""

from __future__ import annotations

from dataclasses import dataclass

from tui.context.cache.prefix import RequestShape, common_prefix_length


SUMMARY_CALL = 0  # a summary call as a record names it; the model holds the k-th under -k, each apart
#                   (the session's own requests count from 1)


def is_summary_call(number: int | None) -> bool:
    return isinstance(number, int) and number <= SUMMARY_CALL


def request_name(number: int | None) -> str:
    """An earlier prompt as the pane names it: 'request 3', or ctxpane's own summary call."""
    return "ctxpane's summary call" if is_summary_call(number) else f"request {number}"


@dataclass(frozen=True)
class HeldPrompt:
    """One earlier request as the server computed it: its prompt, then its reply's tokens."""

    number: int  # the request's number in the session
    shape: RequestShape  # the document that was sent
    prompt_tokens: int  # the prompt as the server counted it (else ctxpane's count)
    generated: int = 0  # tokens the server generated for it
    reply_text: str = ""  # the reply's text, as far as it stands for the generated tokens
    reply_pieces: tuple[str, ...] | None = None  # each generated token's text, when the server said
    reply_known: bool = True  # False: reasoning or tool calls, re-sent in another form than generated
    sent_at: float | None = None  # seconds since the epoch, for providers whose entries expire

    @property
    def text(self) -> str:
        return self.shape.text + (self.reply_text if self.reply_known else "")


@dataclass(frozen=True)
class Shared:
    """What a new prompt has in common with one held prompt."""

    number: int
    chars: int  # common prefix, in characters of the new prompt
    tokens: int  # tokens of the new prompt inside it
    in_reply: int = 0  # of those, tokens that continue into the earlier reply
    assumed: bool = False  # the reply part rests on the reply being re-sent as it was generated


def shared_prefix(held: HeldPrompt, current: RequestShape, reply_cap: int | None = None) -> Shared:
    """The common prefix of `current` with `held`; at most `reply_cap` tokens of the reply (default all)."""
    prompt = held.shape.text
    boundary = common_prefix_length(prompt, current.text)
    tokens = min(current.tokens.tokens_before(boundary), held.prompt_tokens)
    cap = held.generated if reply_cap is None else reply_cap
    if boundary < len(prompt) or not held.reply_known or cap <= 0 or not held.reply_text:
        return Shared(held.number, boundary, tokens)
    rest = current.text[len(prompt):len(prompt) + len(held.reply_text)]
    reply_chars = common_prefix_length(held.reply_text, rest)
    if held.reply_pieces is not None:
        in_reply, chars = _aligned_pieces(held.reply_pieces[:cap], current, len(prompt), reply_chars)
        return Shared(held.number, len(prompt) + chars, tokens + in_reply, in_reply)
    end = len(prompt) + reply_chars
    in_reply = min(cap, max(0, current.tokens.tokens_before(end) - tokens))
    return Shared(held.number, end, tokens + in_reply, in_reply, in_reply > 0)


def _aligned_pieces(pieces: tuple[str, ...], current: RequestShape, start: int, limit: int) -> tuple[int, int]:
    """Generated tokens that the new prompt repeats token for token: the text agrees and each piece is
    exactly one token of the new prompt (the same text cut otherwise is other tokens)."""
    base, offset, count = current.tokens.tokens_before(start), 0, 0
    for piece in pieces:
        if not piece or offset + len(piece) > limit:
            break
        if current.tokens.tokens_before(start + offset + len(piece)) != base + count + 1:
            break
        offset, count = offset + len(piece), count + 1
    return count, offset


def contains(outer: HeldPrompt, inner: HeldPrompt, outer_tokens: int, inner_tokens: int) -> bool:
    """Whether every token of `inner` (its first `inner_tokens`) begins `outer` (`outer_tokens` long)."""
    if outer is inner:
        return True
    if inner_tokens > outer_tokens:
        return False
    unknown_tail = not inner.reply_known and inner_tokens > inner.prompt_tokens
    return not unknown_tail and outer.text.startswith(_known_text(inner, inner_tokens))


def _known_text(held: HeldPrompt, tokens: int) -> str:
    """The text of the first `tokens` tokens of a held prompt, as far as it is known."""
    if tokens <= held.prompt_tokens or not held.reply_text:
        return held.shape.text
    if held.reply_pieces is not None:
        return held.shape.text + "".join(held.reply_pieces[:tokens - held.prompt_tokens])
    return held.text
