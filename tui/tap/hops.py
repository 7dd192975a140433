"""Taps refuse loops: each tap names itself in a header of what it forwards, and refuses a request that names it already.

Two taps pointed at each other (or one at itself) would pass one request back and forth until something timed out:
thousands of requests from one. So each tap draws a random id when it is made and appends it to the `X-Ctxpane-Tap`
hop list of every request it forwards (`id1, id2, …`, one header line). A request that arrives with the tap's own id
in that list has been here before: it is answered 508 Loop Detected at once and not forwarded. A list of MAX_TAPS
ids is refused too (a loop through taps that each drew a new id on a restart, or a chain nobody meant).

The header is the taps' word to each other, not the client's: it is never recorded as a header the client sent
(tui/tap/sent.py leaves it out), so an export does not send it again. Pure helpers of the tap's server.
"""

from __future__ import annotations

import secrets
from enum import Enum
from typing import Iterable

HOP_HEADER = "X-Ctxpane-Tap"
MAX_TAPS = 8  # taps one request may pass through; a request that has passed this many is refused by the next
MAX_HOP_ID = 64  # characters of one id read from the header (a tap's own are 16)


class HopVerdict(Enum):
    FORWARD = "forward"
    LOOP = "loop"  # this tap's own id is in the list: it would forward the request to itself
    TOO_MANY = "too many taps"  # MAX_TAPS taps already: a loop of restarted taps, or a chain nobody meant


def new_tap_id() -> str:
    return secrets.token_hex(8)


def hop_list(raw_headers: Iterable[tuple[bytes, bytes]]) -> list[str]:
    """The ids of the taps a request passed through, in order, from every `X-Ctxpane-Tap` line it holds."""
    name = HOP_HEADER.lower().encode()
    hops: list[str] = []
    for key, value in raw_headers:
        if key.lower() == name:
            hops += [hop.strip()[:MAX_HOP_ID] for hop in value.decode("latin-1").split(",") if hop.strip()]
    return hops


def verdict(hops: list[str], own_id: str) -> HopVerdict:
    if own_id in hops:
        return HopVerdict.LOOP
    if len(hops) >= MAX_TAPS:
        return HopVerdict.TOO_MANY
    return HopVerdict.FORWARD


def with_own_hop(headers: list[tuple[bytes, bytes]], hops: list[str], own_id: str) -> list[tuple[bytes, bytes]]:
    """The headers to forward: the client's, its hop lines replaced by one that ends with this tap's id."""
    name = HOP_HEADER.lower().encode()
    others = [(key, value) for key, value in headers if key.lower() != name]
    return [*others, (HOP_HEADER.encode(), ", ".join([*hops, own_id]).encode())]


def is_hop_header(name: str) -> bool:
    return name.strip().lower() == HOP_HEADER.lower()
