"""Which wire format a request is: by its path (the tap) or by its fields (a file)."""

from __future__ import annotations

from enum import Enum
from typing import Any


class FormatKind(Enum):
    CHAT = "chat"  # POST /v1/chat/completions
    MESSAGES = "messages"  # Anthropic: POST /v1/messages
    RESPONSES = "responses"  # OpenAI: POST /v1/responses

    @property
    def path(self) -> str:
        return {"chat": "/chat/completions", "messages": "/messages", "responses": "/responses"}[self.value]

    @property
    def title(self) -> str:
        return {"chat": "chat completions", "messages": "Messages API", "responses": "Responses API"}[self.value]


KINDS = tuple(kind.value for kind in FormatKind)


class FormatError(ValueError):
    """A body that is not a request of its format: the message says what and where, in one line."""


def kind_of_path(path: str) -> FormatKind | None:
    """The format a POST to `path` speaks (its query and a trailing slash aside), or None for any other path."""
    bare = path.split("?", 1)[0].rstrip("/")
    for kind in FormatKind:
        if bare.endswith(kind.path):
            return kind
    return None


def kind_of_body(body: Any) -> FormatKind | None:
    """The format a body read from a file is in, from the fields only it has; None when it is none of them."""
    if not isinstance(body, dict):
        return None
    if "input" in body and "messages" not in body:
        return FormatKind.RESPONSES
    if "messages" not in body:
        return None
    if "system" in body or "stop_sequences" in body or _has_blocks(body.get("messages")) or _anthropic_tools(body):
        return FormatKind.MESSAGES
    return FormatKind.CHAT


ANTHROPIC_BLOCKS = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking", "document"})


def _has_blocks(messages: Any) -> bool:
    if not isinstance(messages, list):
        return False
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list) and any(isinstance(b, dict) and (b.get("type") in ANTHROPIC_BLOCKS or (
                b.get("type") == "image" and isinstance(b.get("source"), dict))) for b in content):
            return True
    return False


def _anthropic_tools(body: dict[str, Any]) -> bool:
    tools = body.get("tools")
    return isinstance(tools, list) and any(isinstance(t, dict) and "input_schema" in t for t in tools)
