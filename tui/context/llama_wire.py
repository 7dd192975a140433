"""The request as llama.cpp's server hands it to its template: the one normalisation, made before every render.

A client writes a request in many ways the server reads alike (`content: null` or no content, `strict` on a tool,
arguments written compactly or spaced, text in parts). The server brings each into one shape before its template
sees it, so ctxpane does the same here, in this one place (assemble.assemble calls it for every rendering), and the
document and its count are the server's. Each rule, with the server version it was measured against and where a
hosted provider differs, is in docs/normalisation.md.

A hosted provider's accounting template (OpenAI's: it reads the request as the client wrote it) is given the request
as sent: llama.cpp's rules are not that provider's.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any

from tui.context.continuation import joined_for_continuation
from tui.context.families.identity import SHIPPED
from tui.context.families.registry import HOSTED_TEMPLATES
from tui.context.json_types import JSONObject, WireMessage

if TYPE_CHECKING:
    from tui.context.templates.library import ChatTemplate

INT64 = 2 ** 63  # llama.cpp holds a JSON integer in 64 bits
UINT64 = 2 ** 64
LONG_DIGITS = re.compile(r"\d{19}")  # an integer of 19 digits or more may not fit in 63 bits


class Shape(Enum):
    """Whose reading of a request the template is given."""

    LLAMA_CPP = "llama.cpp"  # the server's normalisation (the rules below)
    AS_SENT = "as sent"  # a hosted provider's accounting: the request as the client wrote it


@dataclass(frozen=True)
class Reading:
    """How the server hands a request to one template: its shape, and what the template can read
    (templates/capabilities.py), which decides two rules."""

    shape: Shape = Shape.LLAMA_CPP
    typed_content: bool = False  # text parts handed on as parts (Rule.TEXT_PARTS does not apply)
    object_arguments: bool = True  # arguments handed on parsed (Rule.ARGUMENTS applies)


class Rule(Enum):
    """The rules of the normalisation, each a row of docs/normalisation.md."""

    EMPTY_CONTENT = "content null or absent is empty text"
    TEXT_PARTS = "a list of text parts is one text, the parts joined by a newline (a template that reads parts " \
                 "gets the parts)"
    DEVELOPER_ROLE = "the developer role is system"
    EMPTY_REASONING = "an empty reasoning_content is left out"
    OTHER_MESSAGE_FIELDS = "message fields other than role, content, reasoning_content, name, tool_calls, " \
                           "tool_call_id are left out"
    CALL_FIELDS = "a tool call is type, function (name, arguments) and id, nothing else"
    ARGUMENTS = "tool-call arguments are parsed and written again by the template's tojson (a template that " \
                "takes only text gets the text)"
    TOOL_FIELDS = "a tool is type, function (name, description, parameters), nothing else: strict is left out"
    TOOL_DESCRIPTION = "a tool without a description has an empty one, without parameters an empty object"


# The fields a message keeps, in the order the server hands them to its template (Rule.OTHER_MESSAGE_FIELDS).
MESSAGE_FIELDS = ("role", "content", "reasoning_content", "name", "tool_calls", "tool_call_id")


def shape_for(template: ChatTemplate) -> Shape:
    """The shape a template is given: a hosted provider's accounting template reads the request as sent; every
    other template is one llama.cpp's server (or a server that renders as it does) would run."""
    hosted = template.kind == SHIPPED and template.name in HOSTED_TEMPLATES.values()
    return Shape.AS_SENT if hosted else Shape.LLAMA_CPP


def reading_for(template: ChatTemplate) -> Reading:
    """How the server hands a request to `template` (its capabilities are probed once per template text)."""
    from tui.context.templates.capabilities import capabilities

    shape = shape_for(template)
    if shape is Shape.AS_SENT:
        return Reading(shape)
    found = capabilities(template)
    return Reading(shape, found.typed_content, found.object_arguments)


def server_messages(wire: list[WireMessage], reading: Reading = Reading(),
                    continued: bool = False) -> list[WireMessage]:
    """The messages as the server hands them to its template. `continued`: the last message is a turn the server
    continues (continuation.py), whose text parts it joins by a blank line, not a newline."""
    if reading.shape is Shape.AS_SENT or not wire:
        return [dict(message) for message in wire]
    *before, last = wire
    return [_server_message(message, reading)
            for message in [*before, joined_for_continuation(last) if continued else last]]


def server_tools(tools: list[Any] | None, shape: Shape = Shape.LLAMA_CPP) -> list[Any] | None:
    """The tool definitions as the server hands them to its template (Rule.TOOL_FIELDS, Rule.TOOL_DESCRIPTION).
    A tool that is not a function definition is given as it is: the server refuses the request (chat completions)
    or never sees it (the Responses conversion leaves it out: formats/responses.py)."""
    if not tools or shape is Shape.AS_SENT:
        return tools
    return [_server_tool(tool) for tool in tools]


def template_tools(template: ChatTemplate, tools: list[Any] | None) -> list[Any] | None:
    """The tools as `template` is given them."""
    return server_tools(tools, shape_for(template))


def _server_message(message: WireMessage, reading: Reading) -> WireMessage:
    """Rule.DEVELOPER_ROLE, Rule.EMPTY_REASONING and Rule.OTHER_MESSAGE_FIELDS, with the content's and calls' rules.
    (Written for speed: it runs on every message of every rendering.)"""
    role, content = message.get("role"), message.get("content")
    shaped: WireMessage = {"role": "system" if role == "developer" else role,
                           "content": content if isinstance(content, str) else
                           _server_content(content, reading.typed_content)}
    reasoning, name, calls, answered = (message.get(key) for key in MESSAGE_FIELDS[2:])
    if reasoning:  # an empty reasoning is not handed on
        shaped["reasoning_content"] = reasoning
    if name is not None:
        shaped["name"] = name
    if calls:
        shaped["tool_calls"] = [_server_call(call, reading.object_arguments) for call in calls] \
            if isinstance(calls, list) else calls
    if answered is not None:
        shaped["tool_call_id"] = answered
    return shaped


def _server_content(content: Any, typed: bool = False) -> Any:
    """Rule.EMPTY_CONTENT and Rule.TEXT_PARTS; parts of other kinds (images) are left to the renderer."""
    if content is None:
        return ""
    if not _text_parts(content):
        return content
    if typed:  # the template reads parts: it is handed each part's type and text, nothing else
        return [{"type": "text", "text": str(part.get("text") or "")} for part in content]
    text = ""
    for part in content:  # a newline before each part once there is text: ["", "C"] is "C", ["A", "", "B"] "A\n\nB"
        text += ("\n" if text else "") + str(part.get("text") or "")
    return text


def _text_parts(content: Any) -> bool:
    return isinstance(content, list) and all(isinstance(part, dict) and part.get("type") == "text" for part in content)


def _server_call(call: Any, object_arguments: bool = True) -> Any:
    """Rule.CALL_FIELDS and Rule.ARGUMENTS. A call the server cannot read is given as it is (it refuses it)."""
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict):
        return call
    arguments = function.get("arguments")
    shaped: JSONObject = {"type": call.get("type"), "function": {
        "name": function.get("name"), "arguments": server_arguments(arguments) if object_arguments else arguments},
        "id": call.get("id")}
    return {key: value for key, value in shaped.items() if value is not None}


def server_arguments(arguments: Any) -> Any:
    """Tool-call arguments as the server holds them: the JSON they are, parsed (keys in their order, numbers as
    64-bit integers or doubles), for the template's tojson to write again. Text that is not JSON stays text (the
    server refuses the request)."""
    text = arguments if isinstance(arguments, str) else None
    if text is None:
        try:
            text = json.dumps(arguments, ensure_ascii=False)
        except (TypeError, ValueError, RecursionError):
            return arguments
    wide = _llama_integer if LONG_DIGITS.search(text) else None  # the hook costs a call per integer: only when needed
    try:
        return json.loads(text, parse_int=wide, parse_constant=_not_json)
    except (ValueError, RecursionError):
        return arguments


def _llama_integer(digits: str) -> int | float:
    """A JSON integer as llama.cpp reads it: a signed 64-bit integer; up to 2**64 an unsigned one, which its
    template engine then writes as signed (12345678901234567890 is written -6101065172474983726); beyond, a
    double (99999999999999999999999 is 1e+23)."""
    value = int(digits)
    if -INT64 <= value < INT64:
        return value
    if INT64 <= value < UINT64:
        return value - UINT64
    return float(value)


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # NaN, Infinity: Python reads them, the server does not


def _server_tool(tool: Any) -> Any:
    function = tool.get("function") if isinstance(tool, dict) else None
    if not isinstance(function, dict) or tool.get("type") != "function":
        return tool
    return {"type": "function", "function": {"name": function.get("name") or "",
                                             "description": function.get("description") or "",
                                             "parameters": function.get("parameters") or {}}}
