"""One entry for every format: parse a body into the messages the server renders, write messages as a body."""

from __future__ import annotations

from typing import Any

from tui.context.formats import anthropic, responses
from tui.context.formats.kinds import FormatKind
from tui.context.formats.parsed import Parsed
from tui.context.formats.schemas import ChatBody, check

CHAT_FIELDS = frozenset({"messages", "tools", "model"})


def parse_body(kind: FormatKind, body: Any) -> Parsed:
    """The body's messages, tools and extras; FormatError (one line) when it is not a body of that format."""
    if kind is FormatKind.MESSAGES:
        return anthropic.parse(body)
    if kind is FormatKind.RESPONSES:
        return responses.parse(body)
    check(body, ChatBody, "a chat-completions body")
    tools = body.get("tools")
    return Parsed(kind, list(body["messages"]), tools if isinstance(tools, list) else None,
                  str(body.get("model") or "")[:1000], {k: v for k, v in body.items() if k not in CHAT_FIELDS},
                  list(range(len(body["messages"]))), body=body)


def write_body(kind: FormatKind, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None,
               params: dict[str, Any] | None = None, original: Parsed | None = None) -> dict[str, Any]:
    """A body of `kind` carrying `messages` (chat-completions wire messages) and `tools` (chat-completions
    definitions), with `params` (the model and the body's other fields) as given. With `original` (the parse of a
    body of that kind), what is unchanged since is written as it was: the body parsed comes back byte for byte."""
    params = dict(params or {})
    if original is not None and original.kind is not kind:
        original = None
    if kind is FormatKind.MESSAGES:
        return anthropic.write(messages, tools, params, original)
    if kind is FormatKind.RESPONSES:
        return responses.write(messages, tools, params, original)
    body: dict[str, Any] = {}
    if params.get("model") is not None:
        body["model"] = params.pop("model")
    body["messages"] = messages
    if tools:
        body["tools"] = tools
    body.update({k: v for k, v in params.items() if k not in CHAT_FIELDS})
    return body
