"""A message's header in the transcript: its role, #place, where it came from, its state, and its figures."""

from __future__ import annotations

from enum import Enum

from tui.app.chat.wrap import Block
from tui.app.shown import GLYPHS


def one_row(value: object, limit: int) -> str:
    text = value if isinstance(value, str) else str(value)
    return text[:limit].replace("\r\n", "↵").replace("\n", "↵")


class Standing(Enum):
    """Where a message stands, as its header says: in the request, dropped from it, or still arriving."""

    SENT = "sent"
    DROPPED = "dropped"
    ARRIVING = "arriving"


def header_block(message, index: int, standing: Standing = Standing.SENT, figure: str = "") -> Block:
    """Role, #index, where it came from when that matters, its state (pinned, dropped, incomplete) and its
    figures (tokens, and for a reply how it came: tui/context/message_figures.py)."""
    prov = message.provenance
    pieces: list[tuple[str, str]] = [(one_row(message.role, 20), "role"), (f" #{index}", "meta")]
    if prov.source not in ("user", "system_prompt", "model") or not prov.trusted:
        pieces.append((f"  {one_row(prov.label or prov.source, 80)}", "label"))
    if not prov.trusted:
        pieces.append(("  untrusted", "warn"))
    if message.pinned:
        pieces.append((f"  {GLYPHS['pin']} pinned", "pin"))
    if standing is Standing.DROPPED:
        pieces.append(("  ✂ dropped from the request", "dropped"))
    if message.incomplete:
        pieces.append(("  ⚠ incomplete", "warn"))
    if standing is Standing.ARRIVING:
        pieces.append(("  ● arriving…", "meta"))
    if figure:
        pieces.append((f"  {figure}", "meta"))
    text, spans = "", []
    for piece, style in pieces:
        spans.append((len(text), len(text) + len(piece), style))
        text += piece
    return Block(text, "head", tuple(spans))


def head_guess(message, dropped: bool, width: int, figure: str = "") -> int:
    """Rows of a header, from the lengths of its pieces (exact unless its label has wide characters)."""
    prov = message.provenance
    length = len(message.role) + 8 + (len(figure) + 2 if figure else 0)
    if not (prov.trusted and prov.source in ("user", "system_prompt", "model")):
        length += 2 + min(80, len(prov.label or prov.source))
        length += 11 * (not prov.trusted)
    if message.pinned or dropped or message.incomplete:
        length += 11 * message.pinned + 28 * dropped + 14 * message.incomplete
    return 1 if length <= width else -(-length // max(1, width))


def head_sig(message, index: int, dropped: bool, figure: str = "") -> tuple:
    prov = message.provenance
    return (message.role, index, prov.source, prov.label, prov.trusted, message.pinned, dropped, message.incomplete,
            GLYPHS["pin"], figure)
