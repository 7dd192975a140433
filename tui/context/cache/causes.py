"""Why a new prompt stops sharing an earlier one's prefix: the first divergent text, classed.

The classes are what a user can act on: an edited turn, the system prompt, a date or variable the
template writes, the tool list or its schema order, reasoning the template re-renders, a truncation
that shifted the conversation, JSON written with its keys in another order, a reply re-sent in another
form than the server generated it.
"""

from __future__ import annotations

import json
from bisect import bisect_right
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from tui.context.document import Document
from tui.context.json_types import JSONObject

if TYPE_CHECKING:
    from tui.context.cache.prefix import RequestShape

class CauseClass(StrEnum):
    """What made a prompt stop sharing the earlier prefix, as a user can act on it."""

    FIRST = "first request"
    APPENDED = "appended"  # nothing changed: the earlier prompt is reused whole
    EDITED_TURN = "edited turn"
    SYSTEM_PROMPT = "system prompt"
    TEMPLATE_VALUE = "date or variable in the template"
    TOOLS = "tool list or schema order"
    REASONING = "reasoning re-rendered"
    TRUNCATION = "truncation shift"
    JSON_KEY_ORDER = "JSON key order"
    REPLY = "reply re-rendered"
    SWITCHED = "template or fences switched"
    SUMMARY = "summary call in the slot"  # ctxpane's own summary call was computed where this request is
    OTHER = "other text"


CLASSES = tuple(CauseClass)


@dataclass(frozen=True)
class Cause:
    kind: CauseClass
    text: str  # the sentence shown to the user
    message: int | None = None  # document message index where the prefix ends
    span_kind: str | None = None


def classify(earlier: RequestShape, current: RequestShape, document: Document, boundary: int) -> Cause:
    """The cause of the first difference at character `boundary` of `current`."""
    tail = len(earlier.text) if earlier.tail_start is None else earlier.tail_start
    if boundary >= tail:
        return Cause(CauseClass.APPENDED, "none: the whole previous request is reused (new turns follow)")
    message, kind = _span_at(document, boundary)
    newly_dropped = current.dropped - earlier.dropped
    if newly_dropped:
        names = ", ".join(name for _place, name in sorted(_place_of(earlier, ident) for ident in newly_dropped))
        return Cause(CauseClass.TRUNCATION, f"truncation shift: {names} dropped since the previous request",
                     message, kind)
    restored = (earlier.dropped - current.dropped) & set(current.message_ids)  # back, not deleted since
    if restored:  # a larger window or a pin sends back what an earlier request left out: the text moves too
        names = ", ".join(name for _place, name in sorted(_place_of(current, ident) for ident in restored))
        return Cause(CauseClass.TRUNCATION, f"truncation shift: {names} back since the previous request, which "
                     f"dropped {'it' if len(restored) == 1 else 'them'}", message, kind)
    switched = _switch(earlier, current)
    if switched:  # the whole document is written otherwise: no turn was edited, no template value changed
        return Cause(CauseClass.SWITCHED, switched, message, kind)
    toggled = _fences_toggled(earlier, current, message)
    if toggled:  # the first difference is a message fenced in one request and not in the other
        return Cause(CauseClass.SWITCHED, toggled, message, kind)
    if not _same(earlier.tools or None, current.tools or None) and (message is None or kind == "marker"):
        tools = _tools_cause(earlier.tools or [], current.tools or [])
        return Cause(tools[0], tools[1], message, kind)
    found = _message_cause(earlier, current, message, kind)
    if found is not None:
        return Cause(found[0], found[1], message, kind)
    changed = sorted(k for k in set(earlier.variables) | set(current.variables)
                     if earlier.variables.get(k) != current.variables.get(k))
    if changed:
        return Cause(CauseClass.TEMPLATE_VALUE, f"template variable changed: {', '.join(changed)}", message, kind)
    if kind == "marker":
        return Cause(CauseClass.TEMPLATE_VALUE, "template text changed (a date or other value the template writes)",
                     message, kind)
    return Cause(CauseClass.OTHER, f"changed text in {kind or 'the document'}", message, kind)


def _switch(earlier: RequestShape, current: RequestShape) -> str:
    """'template switched (chatml -> qwen3)' between two requests (by the template's text, not only its name),
    else ''."""
    before, now = getattr(earlier, "template", ""), getattr(current, "template", "")
    digests = getattr(earlier, "template_digest", ""), getattr(current, "template_digest", "")
    if before and now and before != now:
        return f"template switched ({before} -> {now})"
    if before and all(digests) and digests[0] != digests[1]:
        return f"template switched (another {now} template: its text differs)"
    return ""


def _fences_toggled(earlier: RequestShape, current: RequestShape, message: int | None) -> str:
    """'fences turned off' when the message where the prefix ends was sent fenced in one request and not in the
    other, else ''."""
    if message is None or message >= len(current.message_ids):
        return ""
    fenced_then, fenced_now = getattr(earlier, "fenced", None), getattr(current, "fenced", None)
    if fenced_then is None or fenced_now is None or fenced_then == fenced_now:
        return ""
    ident = current.message_ids[message]
    if (ident in getattr(earlier, "fenced_ids", frozenset())) == (ident in getattr(current, "fenced_ids", frozenset())):
        return ""
    return f"fences turned {'on' if fenced_now else 'off'}: {_place_of(current, ident)[1]} is written otherwise"


def _place_of(shape: RequestShape, ident: str) -> tuple[float, str]:
    """A message as the chat names it (#N, its place), with its place to sort by; its id if the shape has none."""
    places = getattr(shape, "places", None) or []
    try:
        place = places[shape.message_ids.index(ident)]
    except (ValueError, IndexError):
        return float("inf"), ident
    if place == -2:  # (replay: deleted from the session since)
        return float("inf"), "a message deleted since"
    if place == -3:  # (replay: kept on a branch not shown now)
        return float("inf"), "a message on another branch"
    return (place, f"#{place}") if place >= 0 else (float("inf"), "the summary")


def _span_at(document: Document, boundary: int) -> tuple[int | None, str | None]:
    if not document.spans or boundary >= len(document.text):
        return None, None
    span = document.spans[bisect_right([s.start for s in document.spans], boundary) - 1]
    return span.message, span.kind


def _message_cause(earlier: RequestShape, current: RequestShape, message: int | None,
                   kind: str | None) -> tuple[CauseClass, str] | None:
    """The cause when the prefix ends inside a message: its text, tool calls or reasoning changed."""
    if message is None or message >= len(current.message_ids):
        return None
    message_id, role = current.message_ids[message], current.message_roles[message]
    old = {mid: index for index, mid in enumerate(earlier.message_ids)}
    name = _place_of(current, message_id)[1]  # said as the chat says it: #N
    if message_id not in old and role in ("system", "developer"):
        return CauseClass.SYSTEM_PROMPT, f"system prompt added ({name})"  # its header differs first: not the template
    if message_id not in old:
        return (CauseClass.EDITED_TURN, f"new message {name} where the previous request had other text") \
            if kind != "marker" else None
    before = old[message_id]
    if earlier.message_texts[before] != current.message_texts[message]:
        if role in ("system", "developer"):
            return CauseClass.SYSTEM_PROMPT, f"changed system prompt ({name})"
        return CauseClass.EDITED_TURN, f"edited {role} message ({name})"
    calls_then, calls_now = _item(earlier.calls, before), _item(current.calls, message)
    if not _same(calls_then, calls_now):
        if _json_equal(calls_then, calls_now):
            return CauseClass.JSON_KEY_ORDER, f"tool call arguments of {name} written with their keys in another order"
        return CauseClass.EDITED_TURN, f"edited tool call in {name}"
    if role == "assistant" and (_item(earlier.reasoning, before) or _item(current.reasoning, message)):
        return CauseClass.REASONING, (f"reasoning of {name} re-rendered: the template writes this earlier turn "
                           "differently now (it drops or moves its reasoning)")
    return None


def _item(values: list[Any], index: int) -> Any:
    return values[index] if index < len(values) else None


def _tools_cause(before: list[JSONObject], after: list[JSONObject]) -> tuple[CauseClass, str]:
    names_before, names_after = [_tool_name(t) for t in before], [_tool_name(t) for t in after]
    if sorted(map(_canonical, before)) == sorted(map(_canonical, after)):
        if names_before != names_after:
            return CauseClass.TOOLS, f"tools reordered: {', '.join(names_before)} -> {', '.join(names_after)}"
        return CauseClass.JSON_KEY_ORDER, "tool schemas written with their keys in another order"
    return CauseClass.TOOLS, "changed tool list"


def _tool_name(tool: Any) -> str:
    function = tool.get("function") if isinstance(tool, dict) else None
    return str(function.get("name", "?")) if isinstance(function, dict) else "?"


def _canonical(value: Any) -> str:
    """A value's JSON with object keys sorted; arguments given as JSON text are parsed first."""
    return json.dumps(_parsed(value), sort_keys=True, ensure_ascii=False, default=str)


def _parsed(value: Any, depth: int = 0) -> Any:
    """Strings that hold JSON read as JSON (a tool's arguments), to compare values, not their spelling; past
    PARSED_DEPTH levels (a hostile tool description nested 50,000 deep) a value is compared as it is."""
    if depth > PARSED_DEPTH:
        return value
    if isinstance(value, str):
        try:
            return _parsed(json.loads(value), depth + 1)
        except (ValueError, RecursionError):
            return value
    if isinstance(value, dict):
        return {key: _parsed(item, depth + 1) for key, item in value.items()}
    if isinstance(value, list):
        return [_parsed(item, depth + 1) for item in value]
    return value


PARSED_DEPTH = 64


def _same(a: Any, b: Any) -> bool:
    """Equal as written: objects with the same keys in another order differ (a template writes them so)."""
    return json.dumps(a, ensure_ascii=False, default=str) == json.dumps(b, ensure_ascii=False, default=str)


def _json_equal(a: Any, b: Any) -> bool:
    return a is not None and b is not None and _canonical(a) == _canonical(b)


def excerpt(text: str, at: int, width: int = 24) -> str:
    """A short window of `text` starting at `at`, for showing where two prompts part."""
    return text[at:at + width]
