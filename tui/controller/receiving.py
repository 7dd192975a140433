"""Sent against received, owned by the sending flow: the window check before a request, the receipt after it.

Before sending, the request's tokens are checked against the server's real window (and where that figure
came from); after the reply or the error, the server's own figures are compared with what was sent, and
what it cost is recorded. A cut or a refusal is said where the user looks: under the reply, in the status line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tui.client.errors import ClientError
from tui.client.figures import receipt_after, reported_from_reply
from tui.context.pricing.prices import PriceTable
from tui.context.fit.received import ADDED, DROPPED, REFUSED, Receipt, observed
from tui.context.untrusted.visible import visible
from tui.context.fit.window import FitCheck, WindowSize, fit_check
from tui.context.fit.window_claims import weigh
from tui.sessions.receipts import record_fit, settle
from tui.controller.compute import Skipped
from tui.controller.events import Severity, Tone

if TYPE_CHECKING:
    from tui.client.reply import Reply
    from tui.context.request import RequestView
    from tui.sessions.model import RequestRecord

    from tui.controller.parts import Parts
    from tui.controller.workbench import Workbench

LOUD = (DROPPED, ADDED, REFUSED)  # verdicts said under the reply; a match is only recorded


def window_said(window: WindowSize | None) -> str:
    if window is None:
        return "window unknown"
    detail = f": {window.detail}" if window.detail else ""
    return f"window {window.tokens} from the {window.source}{detail}"


def reply_reserve(body: dict[str, Any]) -> int:
    """The body's max_tokens as a count (params come from the session file: anything else reserves nothing)."""
    value = body.get("max_tokens")
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def server_window(parts: "Parts") -> tuple[WindowSize | None, str]:
    connection = parts.link.connection
    if connection is None:
        return None, ""
    return connection.info.window, connection.info.kind


def fit_to_server(parts: "Parts", view: "RequestView", body: dict[str, Any]) -> FitCheck:
    """The request (its tokens and the reply it reserves) against the server's window, if it has said one."""
    window, kind = server_window(parts)
    return fit_check(view.sent_tokens, reply_reserve(body), window, kind)


def fit_now(parts: "Parts", view: "RequestView", body: dict[str, Any]) -> FitCheck | None:
    """The request as it stands (draft included), for the pane's header; None until a server has said its window."""
    fit = fit_to_server(parts, view, body)
    return fit if fit.window is not None else None


def check_before_sending(parts: "Parts", record: "RequestRecord", view: "RequestView",
                         body: dict[str, Any]) -> FitCheck:
    """Record whether the request fits the server's window, and warn when it will not."""
    fit = fit_to_server(parts, view, body)
    record_fit(record, fit)
    if fit.fits is False:
        parts.status(visible(f"⚠ will not fit: {fit.message} ({window_said(fit.window)})"), Tone.BAD)
    return fit


def settle_after(parts: "Parts", wb: "Workbench", record: "RequestRecord", view: "RequestView",
                 body: dict[str, Any], reply: "Reply", prices: PriceTable) -> Receipt | None:
    """Compare what the server processed with what was sent, record it and its cost, and say a difference."""
    window, _kind = server_window(parts)
    info = parts.link.connection.info if parts.link.connection else None
    failure = reply.failure if isinstance(reply.failure, ClientError) else None
    outcome = failure if failure is not None else reply
    try:
        receipt = receipt_after(view, outcome, info, reply_reserve(body), window)
        learned = weighed_window(parts, receipt, record.number)
        reported = reported_from_reply(reply) if failure is None else None
        settle(record, wb.session, view, reported, receipt, prices, wb.cache_rule)
    except Exception as exc:  # noqa: BLE001 - odd figures never keep the reply from being kept
        parts.notify(visible(f"could not compare sent with received: {exc}"), severity=Severity.WARNING)
        return None
    if learned is not None and info is not None:  # plan the next requests with it (below the server's own figure)
        info.windows = [w for w in info.windows if w.source != "observed"]
        info.found_window(learned.tokens, learned.source, learned.detail)
    return receipt


def weighed_window(parts: "Parts", receipt: Receipt | None, number: int) -> WindowSize | None:
    """The window this receipt reveals, when a second figure bears it out (tui/context/fit/window_claims.py); the
    receipt says what was made of the claim."""
    claim = observed(receipt, number)
    if receipt is None or claim is None:
        return None
    learned, parts.link.window_claim, line = weigh(claim, number, receipt.sent, receipt.exact, receipt.received,
                                                   receipt.verdict == REFUSED, parts.link.window_claim)
    receipt.notes.append(line)
    return learned


def receipt_note(receipt: Receipt | None) -> str:
    """The line shown under the reply ('' when the server saw what was sent)."""
    if receipt is None or receipt.verdict not in LOUD:
        return ""
    mark = "⚠" if receipt.verdict != REFUSED else "✗"
    return visible(f"{mark} {receipt.summary}")


def say_receipt(parts: "Parts", receipt: Receipt | None) -> None:
    """Put a loud receipt under the session's last message and in the status line."""
    note = receipt_note(receipt)
    messages = parts.wb.session.messages
    if not note or not messages:
        return
    last = messages[-1].id
    earlier = parts.notes.get(last)
    parts.notes[last] = f"{earlier}\n{note}" if earlier else note
    parts.status(note, Tone.BAD)
    parts.changed(save=False)


async def load_prices_once(parts: "Parts", prices: PriceTable | None) -> PriceTable:
    """The shipped price table with the user's over it, read in the worker the first time; problems as a notice."""
    if prices is not None:
        return prices
    from tui.sessions.price_files import load_prices
    loaded = await parts.worker.run(load_prices)
    if isinstance(loaded, Skipped):  # the app is closing: no table, so no cost is worked out
        return PriceTable()
    table, problems = loaded
    for problem in problems:
        parts.notify(visible(problem), severity=Severity.WARNING, timeout=10)
    return table
