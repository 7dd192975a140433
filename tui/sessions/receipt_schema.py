"""The session file's schema for what the server did with each request and what it cost: the check before
sending, sent against received, and the priced figures with their running totals
(tui/context/fit/window.py, received.py, costs.py; tui/sessions/receipts.py writes them)."""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import Meta, Struct

from tui.sessions.schema_types import BIG, Id, Int, List, MAX_MESSAGES, MAX_REQUESTS, Name, Note, Number, PathText, Str, Time


class WindowIn(Struct):
    tokens: Int(1, 10 ** 8)
    source: Name = "default"
    detail: Note = ""


class FitIn(Struct):
    """The check made before sending: does the request fit the server's window."""

    fits: bool | None = None
    prompt_tokens: Int(0, BIG) = 0
    max_tokens: Int(0, BIG) = 0
    window: WindowIn | None = None
    over_by: Int(0, BIG) = 0
    reply_room: Int(0, BIG) | None = None
    consequence: Note = ""
    message: Note = ""


class AffectedIn(Struct):
    message_id: Id
    role: Name = ""
    tokens: Int(0, BIG) = 0
    lost: Int(0, BIG) = 0
    text_tokens: Int(0, BIG) = 0
    text_lost: Int(0, BIG) = 0


class ReceivedIn(Struct):
    """Sent against received, after the reply."""

    sent: Int(0, BIG)
    verdict: Literal["match", "dropped", "added", "refused", "unknown"]
    exact: bool = False
    received: Int(0, BIG) | None = None
    source: Name = ""
    difference: Int(-BIG, BIG) = 0
    where: Literal["front", "middle", "end"] | None = None
    where_basis: Note = ""
    who: Note = ""
    who_detail: Note = ""
    affected: List(AffectedIn, MAX_MESSAGES) = []
    window: WindowIn | None = None
    truncated_flag: bool | None = None
    reply_cut: bool = False
    shifted: bool = False
    observed_window: Int(1, 10 ** 8) | None = None
    notes: List(Note, 50) = []
    summary: Note = ""
    images_estimate: Int(0, BIG) = 0  # image tokens estimated (tui/context/images/tokens.py)
    images_reconciled: Int(-BIG, BIG) | None = None  # what the server's count leaves for the images


class PriceIn(Struct):
    model: Str(1000) = ""
    input: Number = 0
    cached_input: Number = 0
    cache_write: Number = 0
    output: Number = 0
    unit: Name = "USD per 1M tokens"
    source: Note = ""
    table_date: Time = ""
    origin: PathText = ""


Money = Number | None


class FiguresIn(Struct):
    """Tokens and amounts (dollars; null for a model without a price), of a request or of a running total."""

    input_tokens: Int(0, BIG) = 0
    cached_tokens: Int(0, BIG) = 0
    cache_write_tokens: Int(0, BIG) = 0
    output_tokens: Int(0, BIG) = 0
    lost_tokens: Int(0, BIG) = 0
    keep_all_tokens: Int(0, BIG) = 0
    paid: Money = None
    saved_by_cache: Money = None
    lost_to_cache_break: Money = None
    keep_all_paid: Money = None
    keep_all_cached_paid: Money = None


TOTAL = BIG * MAX_REQUESTS  # a running total: up to MAX_REQUESTS figures of up to BIG each
Sum = Annotated[float, Meta(ge=0, le=1e15 * MAX_REQUESTS)] | None


class TotalsIn(FiguresIn):
    requests: Int(0, MAX_REQUESTS) = 0
    priced_requests: Int(0, MAX_REQUESTS) = 0
    input_tokens: Int(0, TOTAL) = 0
    cached_tokens: Int(0, TOTAL) = 0
    cache_write_tokens: Int(0, TOTAL) = 0
    output_tokens: Int(0, TOTAL) = 0
    lost_tokens: Int(0, TOTAL) = 0
    keep_all_tokens: Int(0, TOTAL) = 0
    paid: Sum = None
    saved_by_cache: Sum = None
    lost_to_cache_break: Sum = None
    keep_all_paid: Sum = None
    keep_all_cached_paid: Sum = None


class CostIn(FiguresIn):
    """One request's cost, and the session's running totals up to it (`cumulative`)."""

    model: Str(1000) = ""
    priced: bool = False
    price: PriceIn | None = None
    cached_from: Literal["reported", "predicted"] = "reported"
    cumulative: TotalsIn | None = None
