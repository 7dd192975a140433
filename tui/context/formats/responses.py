"""OpenAI's Responses API (POST /v1/responses): a body to the chat-completions messages the server renders, and back.

The conversion is llama.cpp's server's (server_chat_convert_responses_to_chatcmpl), checked against the real
server's prompt counts: `instructions` a system message first; input messages with their parts; an output
message, a function_call and a reasoning item joined to the assistant turn before them; each
function_call_output a tool message. Items it cannot read are noted (the real server refuses the request).
`previous_response_id` and `store` are kept: the server holds the context before such a request's input.
"""

from __future__ import annotations

from typing import Any

from tui.context.formats.kinds import FormatKind
from tui.context.formats.parsed import Parsed, same_messages
from tui.context.formats.schemas import ResponsesBody, check

INPUT_FIELDS = frozenset({"input", "instructions", "tools", "model"})
INPUT_ROLES = ("user", "system", "developer")


def parse(body: Any) -> Parsed:
    check(body, ResponsesBody, "a Responses API body")
    messages: list[dict[str, Any]] = []
    sources: list[int] = []
    notes: list[str] = []
    ids: list[str] = []
    names: dict[str, str] = {}
    if "instructions" in body:
        messages.append({"role": "system", "content": body.get("instructions") or ""})
        sources.append(-1)
    given = body["input"]
    if isinstance(given, str):
        messages.append({"role": "user", "content": given})
        sources.append(0)
    for index, item in enumerate(given if isinstance(given, list) else []):
        if item.get("id"):
            ids.append(str(item["id"]))
        merge = bool(messages) and messages[-1].get("role") == "assistant"
        content = item.get("content")
        if isinstance(content, str):
            content = [{"text": content, "type": "input_text"}]
        kind, role = item.get("type"), item.get("role")
        where = f"input item {index + 1}"
        if isinstance(content, list) and role in INPUT_ROLES:
            parts = _input_parts(content, where, notes)
            messages.append({"role": role, "content": parts})
            sources.append(index)
        elif isinstance(content, list) and role == "assistant" and kind == "message":
            parts = [{"text": part.get("text") or "", "type": "text"} for part in content
                     if part.get("type") in ("output_text", "input_text", "text")]
            if len(parts) < len(content):
                notes.append(f"{where}: parts of other types than output_text: the server refuses the request")
            if merge:
                previous = messages[-1].get("content")
                messages[-1]["content"] = [*(previous if isinstance(previous, list) else []), *parts]
            else:
                messages.append({"role": "assistant", "content": parts})
                sources.append(index)
        elif kind == "function_call" and isinstance(item.get("arguments"), str) and isinstance(item.get("call_id"), str) \
                and isinstance(item.get("name"), str):
            names[item["call_id"]] = item["name"]
            call = {"function": {"arguments": item["arguments"], "name": item["name"]}, "id": item["call_id"],
                    "type": "function"}
            if merge:
                messages[-1].setdefault("tool_calls", []).append(call)
            else:
                messages.append({"role": "assistant", "tool_calls": [call]})
                sources.append(index)
        elif kind == "function_call_output" and isinstance(item.get("call_id"), str) and \
                isinstance(item.get("output"), (str, list)):
            output = item["output"]
            text: Any = output if isinstance(output, str) else [
                {**part, "type": "text"} for part in output if part.get("type") == "input_text"]
            if isinstance(output, list) and len(text) < len(output):
                notes.append(f"{where}: an output part that is not input_text: the server refuses the request")
            label = f"tool:{names[item['call_id']]}" if names.get(item["call_id"]) else "tool"
            messages.append({"content": text, "role": "tool", "tool_call_id": item["call_id"],
                             "provenance": {"source": "tool", "label": label[:200]}})
            sources.append(index)
        elif kind == "reasoning" and isinstance(item.get("summary"), list):
            reasoning = content[0].get("text") if isinstance(content, list) and content else None
            if not isinstance(reasoning, str):
                notes.append(f"{where}: a reasoning item without its text (summary or encrypted only): llama.cpp "
                             "refuses it; a provider keeps it out of the document")
                continue
            if merge:
                messages[-1]["reasoning_content"] = reasoning
            else:
                messages.append({"role": "assistant", "content": [], "reasoning_content": reasoning})
                sources.append(index)
        else:
            notes.append(f"{where} ({str(kind or role)[:40]}): not an item the server can read (it refuses the "
                         "request)")
    tools = None
    if isinstance(body.get("tools"), list):
        tools = []
        for number, tool in enumerate(body["tools"], start=1):
            if tool.get("type") != "function":
                notes.append(skipped_tool_note(number, tool.get("type")))
                continue
            function = {key: value for key, value in tool.items() if key != "type"}
            function.setdefault("strict", True)
            tools.append({"type": "function", "function": function})
    previous = body.get("previous_response_id")
    params = {key: value for key, value in body.items() if key not in INPUT_FIELDS}
    return Parsed(FormatKind.RESPONSES, messages, tools, str(body.get("model") or "")[:1000], params, sources, [],
                  notes, previous if isinstance(previous, str) and previous else None,
                  body.get("store") if isinstance(body.get("store"), bool) else None, ids, body=body)


def skipped_tool_note(number: int, kind: Any) -> str:
    """What becomes of a tool the server skips: llama.cpp answers 200 without it (web_search, file_search, custom,
    local_shell, mcp, image_generation, code_interpreter: measured), so the model works without a tool its client
    offered and nothing in the reply says so."""
    return (f"tool {number} ({str(kind)[:40]}) is not a function: llama.cpp's server leaves it out and answers "
            "as usual, so the model silently lost this tool (it is not in the document)")


def _input_parts(content: list[dict[str, Any]], where: str, notes: list[str]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for part in content:
        kind = part.get("type")
        if kind == "input_text" and isinstance(part.get("text"), str):
            parts.append({"text": part["text"], "type": "text"})
        elif kind == "input_image" and part.get("image_url") is not None:
            parts.append({"image_url": {"url": part["image_url"]}, "type": "image_url"})
        else:
            notes.append(f"{where}: a part of type {str(kind)[:40]}: the server refuses or leaves it out")
    return parts


# -- back to a body ----------------------------------------------------------------------------------------
def _input_content(content: Any, role: str) -> Any:
    if isinstance(content, str):
        return content
    out: list[dict[str, Any]] = []
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "text":
            out.append({"type": "output_text" if role == "assistant" else "input_text", "text": part.get("text") or ""})
        elif part.get("type") == "image_url" and role != "assistant":
            inner = part.get("image_url")
            out.append({"type": "input_image", "image_url": inner.get("url") if isinstance(inner, dict) else inner})
    return out


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(str(p.get("text") or "") for p in content or [] if isinstance(p, dict) and p.get("type") == "text")


def write_items(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for message in messages:
        role = str(message.get("role") or "user")
        if role == "tool":
            items.append({"type": "function_call_output", "call_id": str(message.get("tool_call_id") or ""),
                          "output": _text(message.get("content"))})
        elif role == "assistant":
            if message.get("reasoning_content"):
                items.append({"type": "reasoning", "summary": [],
                              "content": [{"type": "reasoning_text", "text": message["reasoning_content"]}]})
            text = _text(message.get("content"))
            if text or not message.get("tool_calls") and not message.get("reasoning_content"):
                items.append({"type": "message", "role": "assistant",
                              "content": [{"type": "output_text", "text": text}]})
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                arguments = function.get("arguments", "{}")
                items.append({"type": "function_call", "call_id": str(call.get("id") or ""),
                              "name": str(function.get("name") or ""),
                              "arguments": arguments if isinstance(arguments, str) else _json(arguments)})
        else:
            items.append({"role": role, "content": _input_content(message.get("content"), role)})
    return items


def _json(value: Any) -> str:
    import json
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def write(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, params: dict[str, Any],
          original: Parsed | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {}
    if params.get("model") is not None:
        body["model"] = params["model"]
    rest = messages
    if original is not None and "instructions" in original.body and messages and \
            same_messages(messages[:1], original.messages[:1]):
        body["instructions"] = original.body["instructions"]
        rest = messages[1:]
    elif original is None and messages and messages[0].get("role") == "system" and \
            isinstance(messages[0].get("content"), str):
        body["instructions"] = messages[0]["content"]
        rest = messages[1:]
    body["input"] = _items(rest, original)
    if tools:
        if original is not None and original.tools == tools and isinstance(original.body.get("tools"), list):
            body["tools"] = original.body["tools"]
        else:
            body["tools"] = [{"type": "function", **(tool.get("function") or {})} for tool in tools]
    body.update({key: value for key, value in params.items() if key not in INPUT_FIELDS})
    return body


def _items(messages: list[dict[str, Any]], original: Parsed | None) -> Any:
    if original is None:
        return write_items(messages)
    given = original.body.get("input")
    offset = 1 if "instructions" in original.body else 0
    if isinstance(given, str) and same_messages(messages, original.messages[offset:]):
        return given
    if not isinstance(given, list) or not same_messages(messages, original.messages[offset:]):
        return write_items(messages)  # changed since it was parsed: written afresh
    return given
