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
        return _in_order(anthropic.write(messages, tools, params, original), original)
    if kind is FormatKind.RESPONSES:
        return _in_order(responses.write(messages, tools, params, original), original)
    return _in_order(_chat(messages, tools, params), original)


def _in_order(body: dict[str, Any], original: Parsed | None) -> dict[str, Any]:
    """The body's fields in the order the original body had them (new ones after): the same bytes when unchanged."""
    if original is None:
        return body
    order = {key: place for place, key in enumerate(original.body)}
    return dict(sorted(body.items(), key=lambda item: order.get(item[0], len(order))))


def _chat(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
          params: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {}
    if params.get("model") is not None:
        body["model"] = params.pop("model")
    body["messages"] = messages
    if tools:
        body["tools"] = tools
    body.update({k: v for k, v in params.items() if k not in CHAT_FIELDS})
    return body


# What a parameter is called in each format: carried across when a body is written in another format.
SAME_PARAMETER = ({"chat": "max_tokens", "messages": "max_tokens", "responses": "max_output_tokens"},
                  {"chat": "stop", "messages": "stop_sequences", "responses": ""},
                  {"chat": "temperature", "messages": "temperature", "responses": "temperature"},
                  {"chat": "top_p", "messages": "top_p", "responses": "top_p"},
                  {"chat": "stream", "messages": "stream", "responses": "stream"},
                  {"chat": "metadata", "messages": "", "responses": "metadata"},
                  {"chat": "seed", "messages": "", "responses": ""},
                  {"chat": "top_k", "messages": "top_k", "responses": ""})


def carried_params(source: FormatKind, target: FormatKind, params: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """A body's parameters as another format names them; and the ones that format has no name for (left out)."""
    if source is target:
        return dict(params), []
    names = {row[source.value]: row[target.value] for row in SAME_PARAMETER if row[source.value]}
    kept: dict[str, Any] = {}
    left: list[str] = []
    for key, value in params.items():
        if key == "model":
            kept[key] = value
        elif names.get(key):
            kept[names[key]] = value
        else:
            left.append(key)
    if target is FormatKind.MESSAGES and "max_tokens" not in kept:
        kept["max_tokens"] = 1024  # required by the Messages API
    return kept, left


def wire_request(body: dict[str, Any], api: str) -> dict[str, Any]:
    """The chat-completions body the app built, as the request an endpoint that speaks `api` is sent (itself for
    chat): the client sends these bytes and the session records them, so both are the same."""
    if api == FormatKind.CHAT.value:
        return body
    return rewritten(FormatKind.CHAT, body, FormatKind(api))[0]


def rewritten(kind: FormatKind, body: Any, target: FormatKind) -> tuple[dict[str, Any], list[str]]:
    """A body of `kind` written as a body of `target` (the same messages, tools and the parameters both have);
    and what could not be carried. In its own format a body comes back as it was."""
    parsed = parse_body(kind, body)
    if kind is target:
        return write_body(kind, parsed.messages, parsed.tools, {"model": body.get("model"), **parsed.params}, parsed) \
            if body.get("model") is not None else write_body(kind, parsed.messages, parsed.tools, parsed.params,
                                                             parsed), []
    params, left = carried_params(kind, target, {"model": parsed.model, **parsed.params} if parsed.model
                                  else parsed.params)
    messages = [{k: v for k, v in m.items() if k != "provenance"} for m in parsed.messages]
    return write_body(target, messages, parsed.tools, params), left
