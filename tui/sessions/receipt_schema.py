"""The session file's schema for what the server did with each request and what it cost: the check before
sending, sent against received, and the priced figures with their running totals
(tui/context/fit/window.py, received.py, costs.py; tui/sessions/receipts.py writes them)."""

from __future__ import annotations

from typing import Annotated, Literal, TypeAlias

from msgspec import Meta, Struct

from tui.sessions.schema_types import (BIG, MAX_MESSAGES, MAX_REQUESTS, Count, Id, ModelName, Name, Note, Number,
                                       PathText, RequestCount, SignedCount, Time, WindowSize)


class WindowIn(Struct):
    tokens: WindowSize
    source: Name = "default"
    detail: Note = ""


class FitIn(Struct):
    """The check made before sending: does the request fit the server's window."""

    fits: bool | None = None
    prompt_tokens: Count = 0
    max_tokens: Count = 0
    window: WindowIn | None = None
    over_by: Count = 0
    reply_room: Count | None = None
    consequence: Note = ""
    message: Note = ""


class AffectedIn(Struct):
    message_id: Id
    role: Name = ""
    tokens: Count = 0
    lost: Count = 0
    text_tokens: Count = 0
    text_lost: Count = 0


class ReceivedIn(Struct):
    """Sent against received, after the reply."""

    sent: Count
    verdict: Literal["match", "dropped", "added", "refused", "unknown"]
    exact: bool = False
    received: Count | None = None
    source: Name = ""
    difference: SignedCount = 0
    where: Literal["front", "middle", "end"] | None = None
    where_basis: Note = ""
    who: Note = ""
    who_detail: Note = ""
    affected: Annotated[list[AffectedIn], Meta(max_length=MAX_MESSAGES)] = []
    window: WindowIn | None = None
    truncated_flag: bool | None = None
    reply_cut: bool = False
    shifted: bool = False
    observed_window: WindowSize | None = None
    notes: Annotated[list[Note], Meta(max_length=50)] = []
    summary: Note = ""
    images_estimate: Count = 0  # image tokens estimated (tui/context/images/tokens.py)
    images_reconciled: SignedCount | None = None  # what the server's count leaves for the images
    unreported: Annotated[list[Note], Meta(max_length=50)] = []  # the server's figures not used, and why


class PriceIn(Struct):
    model: ModelName = ""
    input: Number = 0
    cached_input: Number = 0
    cache_write: Number = 0
    output: Number = 0
    unit: Name = "USD per 1M tokens"
    source: Note = ""
    table_date: Time = ""
    origin: PathText = ""


Money: TypeAlias = Number | None


class FiguresIn(Struct):
    """Tokens and amounts (dollars; null for a model without a price), of a request or of a running total."""

    input_tokens: Count = 0
    cached_tokens: Count = 0
    cache_write_tokens: Count = 0
    output_tokens: Count = 0
    lost_tokens: Count = 0
    keep_all_tokens: Count = 0
    paid: Money = None
    saved_by_cache: Money = None
    lost_to_cache_break: Money = None
    keep_all_paid: Money = None
    keep_all_cached_paid: Money = None


TOTAL = BIG * MAX_REQUESTS  # a running total: up to MAX_REQUESTS figures of up to BIG each
Total: TypeAlias = Annotated[int, Meta(ge=0, le=TOTAL)]
Sum: TypeAlias = Annotated[float, Meta(ge=0, le=1e15 * MAX_REQUESTS)] | None


class TotalsIn(FiguresIn):
    requests: RequestCount = 0
    priced_requests: RequestCount = 0
    input_tokens: Total = 0
    cached_tokens: Total = 0
    cache_write_tokens: Total = 0
    output_tokens: Total = 0
    lost_tokens: Total = 0
    keep_all_tokens: Total = 0
    paid: Sum = None
    saved_by_cache: Sum = None
    lost_to_cache_break: Sum = None
    keep_all_paid: Sum = None
    keep_all_cached_paid: Sum = None


class CostIn(FiguresIn):
    """One request's cost, and the session's running totals up to it (`cumulative`)."""

    model: ModelName = ""
    priced: bool = False
    price: PriceIn | None = None
    cached_from: Literal["reported", "predicted"] = "reported"
    cumulative: TotalsIn | None = None
