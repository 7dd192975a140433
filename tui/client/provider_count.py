"""A provider's own count of a request's input tokens, asked before sending: optional, off by default.

OpenAI counts a Responses API input (POST /responses/input_tokens), Anthropic a Messages API request
(POST /messages/count_tokens), Gemini a generateContent request (POST /models/{model}:countTokens).
Each is asked of the configured host only, with the user's key, in that provider's header; the chat
request (chat-completions messages and tools) is rewritten into the provider's shape here. The
answer is checked against its schema and bounded like every other answer.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from enum import Enum
from typing import Any, Literal, Required, TypedDict
from urllib.parse import quote, urlsplit

from msgspec import Struct

from tui.context.json_types import JSONObject, WireMessage

from tui.client.errors import ClientError
from tui.client.http import OpenAIClient
from tui.client.schemas import Count



class CountKind(Enum):
    OPENAI = "openai"
    ANTHROPIC = "anthropic"
    GEMINI = "gemini"


KINDS = tuple(kind.value for kind in CountKind)


class InputTokens(Struct):  # OpenAI's and Anthropic's answer
    input_tokens: Count


class TotalTokens(Struct):  # Gemini's answer
    totalTokens: Count


@dataclass(frozen=True)
class ProviderCount:
    kind: CountKind
    tokens: int | None  # None: the provider did not give a count (`problem` says why)
    local: int  # ctxpane's own count of the same request
    exact_local: bool
    problem: str = ""

    @property
    def difference(self) -> int | None:
        return None if self.tokens is None else self.local - self.tokens

    def line(self) -> str:
        """'provider count (anthropic): 1234 · ctxpane 1230 (4 fewer)' or why there is none."""
        if self.tokens is None:
            return f"provider count ({self.kind.value}): none ({self.problem})"
        diff = self.difference or 0
        said = "the same" if diff == 0 else f"{abs(diff)} {'more' if diff > 0 else 'fewer'}"
        label = "exact" if self.exact_local else "estimate"
        return f"provider count ({self.kind.value}): {self.tokens} · ctxpane {self.local} ({label}, {said})"

    def to_dict(self) -> JSONObject:
        return {"kind": self.kind.value, "provider_tokens": self.tokens, "local_tokens": self.local,
                "difference": self.difference, "problem": self.problem}


async def provider_count(client: OpenAIClient, kind: CountKind, body: JSONObject, local: int,
                         exact_local: bool = False) -> ProviderCount:
    """The provider's count of `body` (a chat-completions body), or a ProviderCount saying why there is none."""
    path, payload = count_request(kind, body, urlsplit(client.endpoint.base_url).path)
    try:
        if kind is CountKind.GEMINI:  # Gemini's own API sits beside its OpenAI-compatible one
            total = await client.post_json(path, payload, at_root="origin", shape=TotalTokens, key_style=kind.value)
            tokens = total.totalTokens
        else:
            answer = await client.post_json(path, payload, at_root=False, shape=InputTokens, key_style=kind.value)
            tokens = answer.input_tokens
    except ClientError as exc:
        return ProviderCount(kind, None, local, exact_local, str(exc)[:300])
    return ProviderCount(kind, tokens, local, exact_local)


def count_request(kind: CountKind, body: JSONObject, base_path: str = "") -> tuple[str, JSONObject]:
    """The path and body of the provider's count request for a chat-completions body: under the base URL
    (OpenAI, Anthropic), or, for Gemini, from the host's origin: its native API's version folder in the base
    URL's path (`/v1beta`, kept with any prefix a gateway adds), then models/{model}:countTokens."""
    model = str(body.get("model") or "")
    messages = [m for m in _list(body.get("messages")) if isinstance(m, dict)]
    tools = [t for t in _list(body.get("tools")) if isinstance(t, dict)]
    if kind is CountKind.OPENAI:
        return "/responses/input_tokens", _openai(model, messages, tools)
    if kind is CountKind.ANTHROPIC:
        return "/messages/count_tokens", _anthropic(model, messages, tools)
    folder, _, bare = model.partition("/") if model.startswith(("models/", "tunedModels/")) else ("models", "", model)
    name = f"{folder}/{bare}"  # the model's own name escaped whole: no '..', '?', '#' or '/' of it in the path
    path = f"{_gemini_root(base_path)}/{folder}/{quote(bare, safe='')}:countTokens"
    return path, {"generateContentRequest": _gemini(name, messages, tools)}


def _gemini_root(base_path: str) -> str:
    """The native API's folder: the base path up to its /v1beta (…/v1beta/openai/v1 is the compatible API)."""
    head, found, _rest = base_path.partition("/v1beta")
    return f"{head.rstrip('/')}/v1beta" if found else "/v1beta"


# -- shared --------------------------------------------------------------------------------------------
class Part(TypedDict, total=False):
    """A content part as every provider's shape is made from: text, or an image (a data: URL's media type and data,
    or a URL)."""

    type: Required[Literal["text", "image"]]
    text: str
    url: str
    media_type: str
    data: str  # base64


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _object(value: Any) -> JSONObject:
    return value if isinstance(value, dict) else {}


def _calls(message: WireMessage) -> list[JSONObject]:
    return [call for call in _list(message.get("tool_calls")) if isinstance(call, dict)]


def _parts(content: Any) -> list[Part]:
    """A message's content as typed parts: text, and images as (media type, base64 data) or a URL."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    found: list[Part] = []
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "text" and isinstance(part.get("text"), str):
            found.append({"type": "text", "text": part["text"]})
        elif part.get("type") == "image_url":
            url = _object(part.get("image_url")).get("url")
            if isinstance(url, str):
                found.append(_image(url))
    return found


def _image(url: str) -> Part:
    """An image part: with the media type and base64 data of a data: URL (none for another URL or a malformed one)."""
    part: Part = {"type": "image", "url": url}
    head, _, data = url.partition(",")
    if not head.startswith("data:") or not head.endswith(";base64"):
        return part
    try:
        base64.b64decode(data[:64] + "=" * (-len(data[:64]) % 4), validate=True)
    except (binascii.Error, ValueError):
        return part
    part["media_type"], part["data"] = head[5:-7] or "image/png", data
    return part


def _text(content: Any) -> str:
    return "".join(p["text"] for p in _parts(content) if p["type"] == "text")


def _arguments(call: JSONObject) -> tuple[str, str, Any]:
    """A tool call's id, name and arguments, parsed (an object where the arguments are JSON)."""
    function = _object(call.get("function"))
    arguments = function.get("arguments", "{}")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            pass
    return str(call.get("id") or ""), str(function.get("name") or ""), arguments


def _arguments_text(call: JSONObject) -> str:
    """A tool call's arguments as the model wrote them: a string passes through untouched (re-dumping it would
    escape non-ASCII and change what is counted)."""
    function = _object(call.get("function"))
    arguments = function.get("arguments", "{}")
    return arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)


def _function(tool: JSONObject) -> JSONObject:
    return _object(tool.get("function"))


# -- OpenAI: a Responses API input -----------------------------------------------------------------------
def _openai(model: str, messages: list[WireMessage], tools: list[JSONObject]) -> JSONObject:
    items: list[JSONObject] = []
    for message in messages:
        role = message.get("role")
        if role == "tool":
            items.append({"type": "function_call_output", "call_id": str(message.get("tool_call_id") or ""),
                          "output": _text(message.get("content"))})
            continue
        parts = [_openai_part(part, role) for part in _parts(message.get("content"))]
        if parts:
            items.append({"role": role, "content": parts})
        for call in _calls(message):
            ident, name, _parsed = _arguments(call)
            items.append({"type": "function_call", "call_id": ident, "name": name, "arguments": _arguments_text(call)})
    payload: JSONObject = {"model": model, "input": items}
    if tools:
        payload["tools"] = [{"type": "function", **_function(t)} for t in tools]
    return payload


def _openai_part(part: Part, role: Any) -> JSONObject:
    if part["type"] == "image":
        return {"type": "input_image", "image_url": part["url"]}
    return {"type": "output_text" if role == "assistant" else "input_text", "text": part["text"]}


# -- Anthropic: a Messages API request ---------------------------------------------------------------------
def _anthropic(model: str, messages: list[WireMessage], tools: list[JSONObject]) -> JSONObject:
    system = "\n\n".join(_text(m.get("content")) for m in messages if m.get("role") in ("system", "developer"))
    turns: list[JSONObject] = []
    for message in messages:
        role = message.get("role")
        if role in ("system", "developer"):
            continue
        blocks = _anthropic_blocks(message)
        speaker = "assistant" if role == "assistant" else "user"
        if turns and turns[-1]["role"] == speaker:  # the API alternates: consecutive turns of one side are joined
            joined = turns[-1]["content"] + blocks  # (a user turn's tool results come before its other blocks)
            turns[-1]["content"] = [b for b in joined if b["type"] == "tool_result"] + \
                [b for b in joined if b["type"] != "tool_result"]
        elif blocks:
            turns.append({"role": speaker, "content": blocks})
    payload: JSONObject = {"model": model, "messages": turns}
    if system:
        payload["system"] = system
    if tools:
        payload["tools"] = [{"name": str(_function(t).get("name") or ""),
                             "description": str(_function(t).get("description") or ""),
                             "input_schema": _function(t).get("parameters") or {"type": "object"}} for t in tools]
    return payload


def _anthropic_blocks(message: WireMessage) -> list[JSONObject]:
    if message.get("role") == "tool":
        return [{"type": "tool_result", "tool_use_id": str(message.get("tool_call_id") or ""),
                 "content": _text(message.get("content"))}]
    blocks: list[JSONObject] = []
    for part in _parts(message.get("content")):
        if part["type"] == "text":
            blocks.append({"type": "text", "text": part["text"]})
        elif "data" in part:
            kind = "document" if part["media_type"] == "application/pdf" else "image"
            blocks.append({"type": kind, "source": {"type": "base64", "media_type": part["media_type"],
                                                      "data": part["data"]}})
        else:
            blocks.append({"type": "image", "source": {"type": "url", "url": part["url"]}})
    for call in _calls(message):
        ident, name, arguments = _arguments(call)
        blocks.append({"type": "tool_use", "id": ident, "name": name,
                       "input": arguments if isinstance(arguments, dict) else {}})
    return blocks


# -- Gemini: a generateContent request ----------------------------------------------------------------------
def _gemini(model: str, messages: list[WireMessage], tools: list[JSONObject]) -> JSONObject:
    system = "\n\n".join(_text(m.get("content")) for m in messages if m.get("role") in ("system", "developer"))
    contents: list[JSONObject] = []
    names = {ident: name for m in messages for ident, name, _ in map(_arguments, _calls(m))}  # call id -> function
    for message in messages:
        role = message.get("role")
        if role in ("system", "developer"):
            continue
        parts = _gemini_parts(message, names)
        speaker = "model" if role == "assistant" else "user"
        if contents and contents[-1]["role"] == speaker:  # one turn a side, as Gemini takes them
            contents[-1]["parts"].extend(parts)
        elif parts:
            contents.append({"role": speaker, "parts": parts})
    request: JSONObject = {"model": model, "contents": contents}
    if system:
        request["systemInstruction"] = {"parts": [{"text": system}]}
    if tools:
        request["tools"] = [{"functionDeclarations": [
            {key: _gemini_schema(value) if key == "parameters" else value
             for key, value in _function(t).items() if key in ("name", "description", "parameters")}
            for t in tools]}]
    return request


def _gemini_schema(value: Any, depth: int = 0) -> Any:
    """A JSON schema without the keys Gemini's OpenAPI subset refuses ($schema, additionalProperties)."""
    if depth > 32:
        return value
    if isinstance(value, dict):
        return {k: _gemini_schema(v, depth + 1) for k, v in value.items() if k not in ("$schema", "additionalProperties")}
    if isinstance(value, list):
        return [_gemini_schema(v, depth + 1) for v in value]
    return value


def _gemini_parts(message: WireMessage, names: dict[str, str]) -> list[JSONObject]:
    if message.get("role") == "tool":
        ident = str(message.get("tool_call_id") or "")
        name = names.get(ident) or str(message.get("name") or ident)  # the function's name, as Gemini wants it
        return [{"functionResponse": {"name": name, "response": {"content": _text(message.get("content"))}}}]
    parts: list[JSONObject] = []
    for part in _parts(message.get("content")):
        if part["type"] == "text":
            parts.append({"text": part["text"]})
        elif "data" in part:
            parts.append({"inlineData": {"mimeType": part["media_type"], "data": part["data"]}})
        else:
            parts.append({"fileData": {"fileUri": part["url"]}})
    for call in _calls(message):
        _ident, name, arguments = _arguments(call)
        parts.append({"functionCall": {"name": name, "args": arguments if isinstance(arguments, dict) else {}}})
    return parts
