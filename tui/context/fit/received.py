"""Sent against received: what ctxpane sent, what the server says it processed, and what that means.

After a reply the server reports how many prompt tokens it processed (`usage.prompt_tokens`,
llama.cpp `timings.prompt_n + cache_n`, Ollama `prompt_eval_count`). When that is fewer than
ctxpane sent, the server (or something between) dropped tokens: `compare` says how many, where they
probably went (the front, the middle, the end: from what this kind of server is known to do and from
what its cache reused), which messages lay there (from the document's per-message token offsets),
and who cut them (the server's context size, Ollama's num_ctx, a proxy).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Literal, TypeAlias

from tui.context.fit import ollama_cut
from tui.context.fit.window import FRONT, MIDDLE, WindowSize, behaviour
from tui.context.json_types import JSONObject

if TYPE_CHECKING:
    from tui.context.cache.prefix import RequestShape
    from tui.context.request import RequestView

# What the server's count says of what was sent (the session schema's `verdict`, tui/sessions/receipt_schema.py).
Verdict: TypeAlias = Literal["match", "dropped", "added", "refused", "unknown"]
Where: TypeAlias = Literal["front", "middle", "end"]  # where a cut probably fell
MATCH: Verdict = "match"
DROPPED: Verdict = "dropped"
ADDED: Verdict = "added"
REFUSED: Verdict = "refused"
UNKNOWN: Verdict = "unknown"
ESTIMATE_SLACK = 0.10  # an estimated count may be this far off (another tokenizer) before it means anything
# Past that margin but within this share (or 32 tokens), an estimate cannot tell a cut from another tokenizer or
# a template of the server's own (a default system prompt, other markers) unless the server's figures say so.
ESTIMATE_DOUBT = 0.25


@dataclass(frozen=True)
class Reported:
    """The server's own figures for one request; None where it said nothing usable."""

    prompt_tokens: int | None = None  # usage.prompt_tokens
    prompt_n: int | None = None  # llama.cpp: tokens evaluated
    cache_n: int | None = None  # llama.cpp: tokens reused from the cache
    cached_tokens: int | None = None  # usage.prompt_tokens_details.cached_tokens
    cache_written: int | None = None  # tokens written to the cache (cache_write_tokens, cache_creation_input_tokens)
    prompt_eval_count: int | None = None  # Ollama's native field
    completion_tokens: int | None = None
    truncated: bool | None = None  # llama.cpp's flag
    finish_reason: str | None = None
    refused: bool = False  # the server answered with a context overflow error
    error_prompt_tokens: int | None = None  # the count in that error
    error_window: int | None = None  # the window in that error
    unreported: tuple[str, ...] = ()  # figures the server gave that failed their checks, each with why (usage_checks)

    def received(self) -> tuple[int | None, str]:
        """The prompt tokens the server processed, and the field that says so."""
        if self.prompt_tokens is not None:
            return self.prompt_tokens, "usage.prompt_tokens"
        if self.prompt_n is not None and self.cache_n is not None:
            return self.prompt_n + self.cache_n, "timings.prompt_n + cache_n"
        if self.prompt_eval_count is not None:
            return self.prompt_eval_count, "prompt_eval_count"
        return None, ""

    def reused(self) -> int | None:
        return self.cached_tokens if self.cached_tokens is not None else self.cache_n


@dataclass(frozen=True)
class MessageRange:
    """Where one message lies in the document, in tokens: [start, end), and which parts are its own text."""

    message_id: str
    role: str
    start: int
    end: int
    text: tuple[tuple[int, int], ...] = ()  # token ranges of its text (not the template's markers around it)

    @property
    def text_tokens(self) -> int:
        return sum(end - start for start, end in self.text)


@dataclass(frozen=True)
class Affected:
    message_id: str
    role: str
    tokens: int  # the message's tokens in the request, markers included
    lost: int  # of which the server probably never saw these
    text_tokens: int = 0  # its own text's tokens
    text_lost: int = 0  # of which lost

    @property
    def whole(self) -> bool:
        return self.lost >= self.tokens

    @property
    def text_intact(self) -> bool:
        return self.text_lost == 0


@dataclass
class Receipt:
    sent: int
    exact: bool
    received: int | None
    source: str  # the server field `received` comes from
    verdict: Verdict
    difference: int = 0  # received - sent
    where: Where | None = None
    where_basis: str = ""
    who: str = ""
    who_detail: str = ""
    affected: list[Affected] = field(default_factory=list)
    window: WindowSize | None = None
    truncated_flag: bool | None = None
    reply_cut: bool = False  # the reply stopped because the window was full
    shifted: bool = False  # the server went past its window by dropping the oldest tokens while replying
    observed_window: int | None = None  # the window the cut reveals (what the server kept)
    notes: list[str] = field(default_factory=list)
    summary: str = ""
    images_estimate: int = 0  # image tokens estimated for the request (placeholders included)
    images_reconciled: int | None = None  # the server's prompt count less the text: what the images took
    unreported: list[str] = field(default_factory=list)  # the server's figures not used, each with why

    def to_dict(self) -> JSONObject:
        data = asdict(self)
        data["window"] = self.window.to_dict() if self.window else None
        return data


def message_ranges(spans: list[tuple[str, str, int, int, int]], roles: dict[str, str]) -> list[MessageRange]:
    """Token ranges per message from a request's spans (message id, kind, start, end, tokens), in order.

    Text of no message (id "") takes room but belongs to nobody. `roles` maps message ids to roles.
    """
    ranges: list[MessageRange] = []
    position = 0
    for message_id, kind, _start, _end, tokens in spans:
        text = ((position, position + tokens),) if kind not in ("marker", "fence") and tokens else ()
        if message_id and ranges and ranges[-1].message_id == message_id and ranges[-1].end == position:
            last = ranges[-1]
            ranges[-1] = MessageRange(last.message_id, last.role, last.start, position + tokens, last.text + text)
        elif message_id:
            ranges.append(MessageRange(message_id, roles.get(message_id, ""), position, position + tokens, text))
        position += tokens
    return ranges


def shape_ranges(shape: RequestShape) -> list[MessageRange]:
    """Token ranges per message of a built request (its RequestShape: spans, message ids and roles)."""
    return message_ranges(shape.spans, dict(zip(shape.message_ids, shape.message_roles)))


def _overlap(start: int, end: int, low: int, high: int) -> int:
    return max(0, min(end, high) - max(start, low))


def affected_messages(ranges: list[MessageRange], start: int, end: int) -> list[Affected]:
    """The messages lying (in part) inside the token range [start, end), each once: a message whose ranges text of
    no message splits (a template's own line inside a turn) is one entry with their sums."""
    hit: dict[str, Affected] = {}
    for item in ranges:
        lost = _overlap(start, end, item.start, item.end)
        if lost:
            text_lost = sum(_overlap(start, end, low, high) for low, high in item.text)
            found = Affected(item.message_id, item.role, item.end - item.start, lost, item.text_tokens, text_lost)
            if item.message_id in hit:
                was = hit[item.message_id]
                found = Affected(was.message_id, was.role, was.tokens + found.tokens, was.lost + found.lost,
                                 was.text_tokens + found.text_tokens, was.text_lost + found.text_lost)
            hit[item.message_id] = found
    return list(hit.values())


def dropped_range(where: Where, lost: int, sent: int, ranges: list[MessageRange], keep_head: int = 0) -> tuple[int, int]:
    """The token range a cut of `lost` tokens took: after `keep_head` at the front, after the first
    user turn in the middle, the last tokens at the end."""
    if where == "front":
        start = min(keep_head, sent)
    elif where == "middle":
        users = [r for r in ranges if r.role == "user"]
        start = users[0].end if users else 0
        start = min(start, max(0, sent - lost))  # a middle cut still has to fit inside the request
    else:
        start = max(0, sent - lost)
    return start, min(sent, start + lost)


def _tolerance(sent: int, exact: bool) -> int:
    return 0 if exact else max(4, round(sent * ESTIMATE_SLACK))


def _side(kind: str, reused: int | None, ranges: list[MessageRange]) -> tuple[Where, str, int]:
    """Where a cut probably fell, why we think so, and what a front cut keeps at the start."""
    known = behaviour(kind)
    first_end = ranges[0].end if ranges else 0
    if reused is not None and first_end and reused >= first_end and known.prompt != MIDDLE:
        return ("middle", f"the server reused {reused} tokens from its cache, so the start of the request was "
                "kept: the cut fell after it", 0)
    if known.prompt == FRONT:
        return "front", known.basis, known.keep_head
    if known.prompt == MIDDLE:
        return "middle", known.basis, 0
    return "front", "servers and proxies that cut silently usually drop the oldest tokens (an assumption)", 0


def _who(kind: str, received: int, sent: int, window: WindowSize | None, truncated: bool | None,
         version: str = "") -> tuple[str, str]:
    near_window = window is not None and received >= window.tokens - max(8, window.tokens // 100)
    if kind == "ollama":
        return "Ollama's num_ctx", ollama_cut.explained(received, version)[0]
    if near_window and window is not None:
        return ("the server's context size", f"it kept {received} tokens, the window of {window.tokens} "
                f"({window.source})")
    if truncated:
        return "the server", "it reports truncated = true"
    if window is not None and sent < window.tokens:
        return ("a proxy or gateway", f"the server's window of {window.tokens} ({window.source}) would have held "
                f"all {sent} tokens, so something between ctxpane and the model cut them")
    return ("the server's context size or a proxy", "the server's window is unknown: it kept "
            f"{received} tokens, which may be its window")


def compare(sent: int, exact: bool, reported: Reported, ranges: list[MessageRange], kind: str = "",
            window: WindowSize | None = None, max_tokens: int = 0, version: str = "") -> Receipt:
    """Sent against received for one request (see the module doc)."""
    received, source = reported.received()
    receipt = Receipt(sent, exact, received, source, UNKNOWN, window=window, truncated_flag=reported.truncated,
                      unreported=list(reported.unreported))
    if reported.refused:
        return _refused(receipt, reported)
    if received is None:
        if reported.truncated:  # its flag says it cut the prompt, with no count to say how much
            receipt.verdict = DROPPED
            receipt.summary = ("the server says it truncated the prompt (truncated = true) but reported no prompt "
                               "token count: how many tokens it dropped, and from where, is unknown")
            return receipt
        receipt.summary = "the server reported no prompt token count: nothing to compare"
        return receipt
    receipt.difference = received - sent
    _reply_limits(receipt, reported, max_tokens)
    if abs(receipt.difference) <= _tolerance(sent, exact) and not reported.truncated:
        receipt.verdict = MATCH
        label = "exactly" if receipt.difference == 0 else f"within the estimate's margin ({receipt.difference:+d})"
        receipt.summary = f"the server processed {received} prompt tokens: {label} what ctxpane sent ({sent})"
        return receipt
    if _doubtful(receipt, reported):
        return _differs(receipt)
    if receipt.difference > 0:
        return _added(receipt)
    return _dropped(receipt, reported, ranges, kind, version)


def _doubtful(receipt: Receipt, reported: Reported) -> bool:
    """An estimated count off by a little: no finding, unless the server flags a cut or stopped at its window."""
    window, received = receipt.window, receipt.received or 0
    if receipt.exact or reported.truncated:
        return False
    if window is not None and received >= window.tokens - max(8, window.tokens // 100):
        return False
    return abs(receipt.difference) <= max(32, round(receipt.sent * ESTIMATE_DOUBT))


def _differs(receipt: Receipt) -> Receipt:
    more = "more" if receipt.difference > 0 else "fewer"
    receipt.summary = (f"the server processed {receipt.received} prompt tokens, {abs(receipt.difference)} {more} than "
                       f"ctxpane's estimate of {receipt.sent}: an estimate (another tokenizer or template) cannot "
                       "tell that from a cut; the server's tokenizer or the model's own template makes it exact")
    return receipt


def _refused(receipt: Receipt, reported: Reported) -> Receipt:
    receipt.verdict = REFUSED
    count, limit = reported.error_prompt_tokens, reported.error_window
    receipt.received, receipt.source = count, ("the error's n_prompt_tokens" if count is not None else "")
    if count is not None:
        receipt.difference = count - receipt.sent
    if limit:
        receipt.observed_window = limit
        receipt.who, receipt.who_detail = "the server's context size", f"its error names a window of {limit}"
    figures = f" ({count} tokens by its count, window {limit})" if count is not None or limit else ""
    receipt.summary = f"the server refused the request as larger than its context window{figures}: nothing was cut"
    return receipt


def _added(receipt: Receipt) -> Receipt:
    receipt.verdict = ADDED
    receipt.who = "the server's own template or a proxy"
    receipt.who_detail = ("the server counts more than ctxpane rendered: a system prompt or tool text it adds, a "
                          "template of its own, a BOS token it puts in front, or a proxy adding text")
    receipt.summary = (f"the server processed {receipt.received} prompt tokens, {receipt.difference} more than "
                       f"ctxpane sent ({receipt.sent}): {receipt.who_detail}")
    return receipt


def _dropped(receipt: Receipt, reported: Reported, ranges: list[MessageRange], kind: str,
             version: str = "") -> Receipt:
    lost = receipt.sent - (receipt.received or 0)
    receipt.verdict = DROPPED
    if lost <= 0:  # only the truncated flag says so: no count to place
        receipt.summary = "the server says it truncated the prompt, but its count matches what was sent"
        return receipt
    where, basis, keep_head = _side(kind, reported.reused(), ranges)
    receipt.where, receipt.where_basis = where, basis
    start, end = dropped_range(where, lost, receipt.sent, ranges, keep_head)
    receipt.affected = affected_messages(ranges, start, end)
    receipt.who, receipt.who_detail = _who(kind, receipt.received or 0, receipt.sent, receipt.window,
                                           reported.truncated, version)
    if receipt.who == "Ollama's num_ctx":  # from 0.30.11 it keeps half its window: the window is twice that
        receipt.observed_window = ollama_cut.explained(receipt.received, version)[1] if receipt.received else None
    elif receipt.who in ("the server's context size", "the server's context size or a proxy"):
        receipt.observed_window = receipt.received or None  # a server that kept nothing shows no window
    receipt.summary = (f"the server dropped ~{lost} of the {receipt.sent} tokens sent, probably from the {where} "
                       f"({_names(receipt.affected)}); by {receipt.who}")
    return receipt


def _names(affected: list[Affected]) -> str:
    if not affected:
        return "text of no message"
    parts = [f"{a.message_id} ({a.role}, {_loss(a)})" for a in affected[:6]]
    more = f" and {len(affected) - 6} more" if len(affected) > 6 else ""
    return ", ".join(parts) + more


def _loss(item: Affected) -> str:
    if item.whole:
        return "whole"
    if item.text_intact:
        return f"{item.lost} marker tokens, its text intact"
    return f"{item.lost} of {item.tokens} tokens"


def _reply_limits(receipt: Receipt, reported: Reported, max_tokens: int) -> None:
    """Did the reply run into the window: stopped there, or went on past it by shifting the context?"""
    window, completion = receipt.window, reported.completion_tokens
    if window is None or completion is None or receipt.received is None:
        return
    total = receipt.received + completion
    if total > window.tokens:
        receipt.shifted = True
        receipt.notes.append(f"prompt and reply came to {total} tokens, past the window of {window.tokens}: the "
                             f"server dropped its oldest ~{total - window.tokens} tokens to keep writing "
                             "(context shift)")
    elif reported.finish_reason == "length" and total == window.tokens and (not max_tokens or completion < max_tokens):
        receipt.reply_cut = True
        asked = f" of the {max_tokens} asked for" if max_tokens else ""
        receipt.notes.append(f"the reply stopped after {completion} tokens{asked}: the window of {window.tokens} "
                             "was full")


def observed(receipt: Receipt | None, number: int) -> WindowSize | None:
    """The window a request revealed (the tokens a server kept when it cut, or the window its refusal
    named), to plan the next requests with: it outranks every figure but the server's own."""
    if receipt is None or not receipt.observed_window:
        return None
    tokens = receipt.observed_window
    how = (f"the server's refusal named a window of {tokens} tokens" if receipt.verdict == REFUSED
           else f"the server kept only {tokens} tokens" if tokens == receipt.received
           else f"the server kept {receipt.received} tokens of its window of at least {tokens}")
    return WindowSize(tokens, "observed", f"request {number}: {how}")


def compare_view(view: "RequestView", reported: Reported, kind: str = "", window: WindowSize | None = None,
                 max_tokens: int = 0, version: str = "") -> Receipt:
    """`compare` for a built request (a RequestView): its count, its exactness and its message ranges.

    Image tokens are estimates, so a request carrying them is compared as an estimate.
    """
    exact = bool(view.snapshot.counts.exact) and not view.image_tokens
    receipt = compare(view.sent_tokens, exact, reported, shape_ranges(view.shape), kind, window, max_tokens, version)
    reconcile_images(receipt, view)
    return receipt


def reconcile_images(receipt: Receipt, view: "RequestView") -> None:
    """Attribute the difference between the server's prompt count and ctxpane's text count to the images.

    The document's text (placeholders left out) is counted here; what the server counted beyond it is
    what its images took: the estimate, reconciled. With a text count that is itself an estimate, so is this."""
    images = view.hidden.images
    if not images or receipt.received is None or receipt.verdict == REFUSED:
        return
    estimate = sum(image.estimate.tokens for image in images)
    text = view.snapshot.counts.total - sum(image.placeholder_tokens for image in images)
    receipt.images_estimate, receipt.images_reconciled = estimate, receipt.received - text
    how = "" if view.snapshot.counts.exact else " (the text count is an estimate too)"
    receipt.notes.append(f"images: {estimate} tokens estimated, {receipt.images_reconciled} by the server's count "
                         f"(reconciled{how}: {receipt.images_reconciled - estimate:+d})")
