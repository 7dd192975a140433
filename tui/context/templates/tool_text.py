"""What a template writes only because the request has tools: the tools' whole cost, not only their JSON.

A template that is given tools writes their schemas and, around them, text of its own: an instruction to call
them, a format for the call, a system turn it would not write otherwise. All of it is what the tools cost. It is
learned by rendering two small probe conversations with and without the tools and taking what the tools added
(the text between the common start and the common end); the pane then finds that text in the real document.
Learned once per template and tool list.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from tui.context.json_types import JSONObject, WireMessage

if TYPE_CHECKING:
    from tui.context.hidden_tokens import Category, HiddenTokens
    from tui.context.templates.library import ChatTemplate

PROBES: tuple[list[WireMessage], ...] = (
    [{"role": "system", "content": "S\u2063"}, {"role": "user", "content": "U\u2063"}],
    [{"role": "user", "content": "U\u2063"}])


def tool_texts(template: ChatTemplate, tools: list[JSONObject] | None) -> tuple[tuple[str, ...], ...]:
    """What the template adds for `tools`, one set of pieces per probe (the largest first); () when it adds
    nothing or cannot be probed."""
    if not tools:
        return ()
    try:
        key = (template.name, template.identity.digest, json.dumps(template.defaults, sort_keys=True, default=str),
               json.dumps(tools, sort_keys=True, default=str))
    except (TypeError, ValueError, RecursionError):
        return ()
    if key not in _LEARNED:
        if len(_LEARNED) >= 64:
            _LEARNED.clear()
        _LEARNED[key] = _learned(template, tools)
    return _LEARNED[key]


# (name, text digest, defaults as JSON, tools as JSON) -> what the tools add
_LEARNED: dict[tuple[str, str | None, str, str], tuple[tuple[str, ...], ...]] = {}


def _learned(template: ChatTemplate, tools: list[JSONObject]) -> tuple[tuple[str, ...], ...]:
    """For each probe, the pieces of text the tools added (a template may add in two places: a line in the
    system turn and a section of its own)."""
    found: list[tuple[str, ...]] = []
    for probe in PROBES:
        try:
            with_tools = template.render(probe, add_generation_prompt=True, tools=tools)
            without = template.render(probe, add_generation_prompt=True)
        except Exception:  # noqa: BLE001 - a template that refuses the probe: the JSON regions are used instead
            continue
        pieces = tuple(piece for piece in _inserted(with_tools, without) if piece.strip())
        if pieces and pieces not in found:
            found.append(pieces)
    return tuple(sorted(found, key=lambda pieces: -sum(map(len, pieces))))


def _inserted(longer: str, shorter: str) -> list[str]:
    """The runs of text `longer` has that `shorter` has not, each cut at whole control markers."""
    from difflib import SequenceMatcher

    matcher = SequenceMatcher(None, shorter, longer, autojunk=False)
    pieces: list[str] = []
    for tag, _a1, _a2, start, stop in matcher.get_opcodes():
        if tag in ("insert", "replace"):
            pieces.append(_whole_markers(longer, start, stop))
    return pieces


def _whole_markers(text: str, start: int, stop: int) -> str:
    """text[start:stop], moved out of any control marker it cuts (`<|tools_start|>` against `<|im_start|>` share
    "<|"): a cut inside one at its start moves to the marker's start, one at its end to the marker's start."""
    opened = text.rfind("<", max(0, start - MARKER), start)
    if opened >= 0 and text.find(">", opened, start) == -1:
        start = opened
    closing, opening = text.find(">", stop, stop + MARKER), text.find("<", stop, stop + MARKER)
    if closing >= 0 and (opening == -1 or closing < opening):
        stop = max(start, text.rfind("<", start, stop))
    return text[start:stop]


MARKER = 40  # characters a control marker may have


def settle_tools(hidden: HiddenTokens, added: int) -> None:
    """Make the tools' cell of `hidden` (a hidden_tokens.HiddenTokens) exactly what the tools add (`added`: the
    request's tokens less the same request's without tools). Found by its text, the cell can miss a token or two the tokenizer merges across the edge of
    the tools' text; those move between it and the template cell of the turn that holds the tools, so every cell
    still sums to the total."""
    off = added - hidden.total("tool_schema")
    holders = [turn for turn in hidden.turns if turn.counts["tool_schema"]] or hidden.turns[:1]
    if not off or not holders:
        return
    turn = max(holders, key=lambda t: t.counts["tool_schema"])
    others: tuple[Category, ...] = ("template", "text", "tool_results", "tool_calls", "reasoning")
    for category in others:
        moved = max(-turn.counts["tool_schema"], min(off, turn.counts[category]))  # never below zero either side
        turn.counts[category] -= moved
        turn.counts["tool_schema"] += moved
        off -= moved
        if not off:
            return
