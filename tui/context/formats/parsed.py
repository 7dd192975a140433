"""What a parsed body holds: the messages the server renders, and what the format carries beside them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tui.context.formats.kinds import FormatKind


@dataclass(frozen=True)
class Breakpoint:
    """An Anthropic `cache_control` breakpoint: the prompt up to the end of its block is written to the cache."""

    message: int  # the parsed message whose text the block ends in (-1: the tool definitions, before any message)
    where: str  # "system block 2", "message 3 block 1", "tool get_weather"
    ttl: str  # "5m" or "1h"
    offset: int  # characters of that message's text up to the end of the block (-1: its end)


@dataclass
class Parsed:
    kind: FormatKind
    messages: list[dict[str, Any]]  # chat-completions messages, as the server renders them
    tools: list[dict[str, Any]] | None  # chat-completions tool definitions, as the server renders them
    model: str = ""
    params: dict[str, Any] = field(default_factory=dict)  # the body's other fields, as sent
    sources: list[int] = field(default_factory=list)  # per message: the wire item it came from (-1: system)
    breakpoints: list[Breakpoint] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what the server leaves out of the document, and why
    previous_response_id: str | None = None  # Responses: the server holds the context before this input
    store: bool | None = None  # Responses: whether the server keeps this response (for a later previous_response_id)
    item_ids: list[str] = field(default_factory=list)  # Responses: the ids of the input items that have one
    body: dict[str, Any] = field(default_factory=dict, repr=False)  # the body parsed (items written back as they were)


WIRE_KEYS = ("role", "content", "name", "tool_calls", "tool_call_id", "reasoning_content")


def wire_view(message: dict[str, Any]) -> dict[str, Any]:
    """A message as the server is sent it (no provenance, no session id; no content is empty content)."""
    view = {key: message[key] for key in WIRE_KEYS if message.get(key) is not None}
    view.setdefault("content", "")
    return view


def same_messages(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> bool:
    return len(a) == len(b) and all(wire_view(x) == wire_view(y) for x, y in zip(a, b))
