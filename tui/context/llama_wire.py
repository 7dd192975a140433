"""The messages and tools as llama.cpp's server hands them to its template: what a Messages or Responses body
becomes there (RequestSettings.llama_normalised in tui/context/request.py; `ctxpane doctor` counts them too)."""

from __future__ import annotations

import json
from typing import Any


def llama_messages(wire: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages as llama.cpp's server hands them to its template (common_chat_msgs_parse_oaicompat and back):
    a list of text parts joined into one text (a newline before each part once the text is not empty), the
    developer role as system, and tool-call arguments that are JSON as the object they hold."""
    out = []
    for message in wire:
        message = dict(message)
        content = message.get("content")
        if isinstance(content, list) and content and all(isinstance(p, dict) and p.get("type") == "text"
                                                         for p in content):
            text = ""
            for part in content:
                text += ("\n" if text else "") + str(part.get("text") or "")
            message["content"] = text
        if message.get("role") == "developer":
            message["role"] = "system"
        if isinstance(message.get("tool_calls"), list):
            message["tool_calls"] = [_object_arguments(call) for call in message["tool_calls"]]
        out.append(message)
    return out


def _object_arguments(call: Any) -> Any:
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict) or not isinstance(function.get("arguments"), str):
        return call
    try:
        arguments = json.loads(function["arguments"])
    except (ValueError, RecursionError):
        return call
    return {**call, "function": {**function, "arguments": arguments}}


def llama_tools(tools: list[Any] | None) -> list[Any] | None:
    """Tool definitions as llama.cpp's server hands them to its template: name, description ("" when none) and
    parameters, nothing else (a Responses tool's `strict` is not shown to the model)."""
    if not tools:
        return tools
    out = []
    for tool in tools:
        function = tool.get("function") if isinstance(tool, dict) and isinstance(tool.get("function"), dict) else None
        if function is None:
            out.append(tool)
            continue
        out.append({"type": "function", "function": {"name": function.get("name") or "",
                                                     "description": function.get("description") or "",
                                                     "parameters": function.get("parameters") or {}}})
    return out
