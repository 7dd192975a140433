"""Anthropic's Messages API (POST /v1/messages): a body to the chat-completions messages the server renders, and back.

The conversion is llama.cpp's server's (server_chat_convert_anthropic_to_oai), checked against the real server's
prompt counts: the system blocks joined into one system message, text and image blocks kept as parts (with their
`cache_control`), `thinking` as the turn's reasoning, `tool_use` as tool calls, and each `tool_result` a tool
message after the rest of its turn. What it leaves out (redacted thinking, documents, unknown blocks) is noted.
"""

from __future__ import annotations

import json
from typing import Any

from tui.context.formats.kinds import FormatKind
from tui.context.formats.parsed import Breakpoint, Parsed, same_messages
from tui.context.formats.schemas import MessagesBody, check

MESSAGE_FIELDS = frozenset({"messages", "system", "tools", "model"})
TEXT_BLOCK_KEYS = frozenset({"type", "text", "cache_control"})


def arguments_text(value: Any) -> str:
    """A tool_use input as the server writes it into the tool call: compact JSON, in the order it came."""
    return json.dumps(value if value is not None else {}, ensure_ascii=False, separators=(",", ":"))


def _ttl(block: dict[str, Any]) -> str | None:
    mark = block.get("cache_control")
    return str(mark.get("ttl") or "5m") if isinstance(mark, dict) else None


def _joined_length(parts: list[dict[str, Any]]) -> int:
    """The length of the text parts joined as llama.cpp joins them for a template without typed content."""
    texts = [str(part.get("text") or "") for part in parts if part.get("type") == "text"]
    total = 0
    for text in texts:
        total += (1 if total else 0) + len(text)
    return total


def parse(body: Any) -> Parsed:
    check(body, MessagesBody, "a Messages API body")
    messages: list[dict[str, Any]] = []
    sources: list[int] = []
    marks: list[Breakpoint] = []
    notes: list[str] = []
    names: dict[str, str] = {}  # tool_use id -> the tool's name (a result's provenance label)
    system = body.get("system")
    if system is not None:
        text = system if isinstance(system, str) else ""
        for number, block in enumerate(system if isinstance(system, list) else [], start=1):
            if block.get("type") == "text":
                text += block.get("text") or ""
                ttl = _ttl(block)
                if ttl:
                    marks.append(Breakpoint(0, f"system block {number}", ttl, len(text)))
            else:
                notes.append(f"system block {number} ({str(block.get('type'))[:40]}) is not text: the server leaves "
                             "it out")
        messages.append({"role": "system", "content": text})
        sources.append(-1)
    for index, message in enumerate(body["messages"]):
        role, content = message["role"], message["content"]
        if isinstance(content, str):
            messages.append({"role": role, "content": content})
            sources.append(index)
            continue
        parts: list[dict[str, Any]] = []
        calls: list[dict[str, Any]] = []
        results: list[dict[str, Any]] = []
        result_marks: list[tuple[int, str, str]] = []
        reasoning = ""
        own_marks: list[tuple[str, str, int]] = []
        for number, block in enumerate(content, start=1):
            kind, ttl = block.get("type"), _ttl(block)
            where = f"message {index + 1} block {number}"
            if kind == "text":
                parts.append(block)
                if ttl:
                    own_marks.append((where, ttl, _joined_length(parts)))
            elif kind == "thinking":
                reasoning += block.get("thinking") or ""
                if ttl:
                    own_marks.append((where, ttl, -1))
            elif kind == "image":
                part = _image(block.get("source") or {})
                if part is None:
                    notes.append(f"{where}: an image of source type {str((block.get('source') or {}).get('type'))[:40]}"
                                 " is left out by the server")
                else:
                    parts.append(part)
                if ttl:
                    own_marks.append((where, ttl, _joined_length(parts)))
            elif kind == "tool_use":
                names[str(block.get("id") or "")] = str(block.get("name") or "")
                calls.append({"id": block.get("id") or "", "type": "function",
                              "function": {"name": block.get("name") or "", "arguments": arguments_text(block.get("input"))}})
                if ttl:
                    own_marks.append((where, ttl, -1))
            elif kind == "tool_result":
                ident = str(block.get("tool_use_id") or "")
                result = block.get("content")
                text = result if isinstance(result, str) else "".join(
                    str(inner.get("text") or "") for inner in result or [] if inner.get("type") == "text")
                if isinstance(result, list) and any(inner.get("type") != "text" for inner in result):
                    notes.append(f"{where}: the tool result's non-text blocks are left out by the server")
                label = f"tool:{names[ident]}" if names.get(ident) else "tool"
                results.append({"role": "tool", "tool_call_id": ident, "content": text,
                                "provenance": {"source": "tool", "label": label[:200]}})
                if ttl:
                    result_marks.append((len(results) - 1, where, ttl))
            else:
                shown = "redacted_thinking" if kind == "redacted_thinking" else str(kind)[:40]
                notes.append(f"{where} ({shown}) is left out of the document by the server")
        if parts or calls or reasoning:
            turn: dict[str, Any] = {"role": role, "content": parts if parts else ""}
            if calls:
                turn["tool_calls"] = calls
            if reasoning:
                turn["reasoning_content"] = reasoning
            marks.extend(Breakpoint(len(messages), where, ttl, offset) for where, ttl, offset in own_marks)
            messages.append(turn)
            sources.append(index)
        for place, result in enumerate(results):
            marks.extend(Breakpoint(len(messages), where, ttl, -1) for at, where, ttl in result_marks if at == place)
            messages.append(result)
            sources.append(index)
    tools = None
    if isinstance(body.get("tools"), list):
        tools = []
        for tool in body["tools"]:
            tools.append({"type": "function", "function": {
                "name": tool.get("name") or "", "description": tool.get("description") or "",
                "parameters": tool["input_schema"] if isinstance(tool.get("input_schema"), dict) else {}}})
            ttl = _ttl(tool)
            if ttl:
                marks.insert(0, Breakpoint(-1, f"tool {str(tool.get('name'))[:80]}", ttl, -1))
    params = {key: value for key, value in body.items() if key not in MESSAGE_FIELDS}
    return Parsed(FormatKind.MESSAGES, messages, tools, str(body.get("model") or "")[:1000], params, sources, marks,
                  notes, body=body)


def _image(source: dict[str, Any]) -> dict[str, Any] | None:
    if source.get("type") == "base64":
        url = f"data:{source.get('media_type') or 'image/jpeg'};base64,{source.get('data') or ''}"
        return {"type": "image_url", "image_url": {"url": url}}
    if source.get("type") == "url":
        return {"type": "image_url", "image_url": {"url": source.get("url") or ""}}
    return None


# -- back to a body ----------------------------------------------------------------------------------------
def _text_blocks(content: Any) -> list[dict[str, Any]]:
    """A chat message's content as Messages blocks: text blocks (their cache_control kept) and images."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    blocks: list[dict[str, Any]] = []
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "text":
            blocks.append({key: part[key] for key in ("type", "text", "cache_control") if key in part})
        elif part.get("type") == "image_url":
            inner = part.get("image_url")
            url = inner.get("url") if isinstance(inner, dict) else inner
            blocks.append(_image_block(str(url or "")))
    return blocks


def _image_block(url: str) -> dict[str, Any]:
    head, comma, data = url.partition(",")
    if url.startswith("data:") and comma and head.endswith(";base64"):
        return {"type": "image", "source": {"type": "base64", "media_type": head[5:-7] or "image/png", "data": data}}
    return {"type": "image", "source": {"type": "url", "url": url}}


def _tool_input(arguments: Any) -> Any:
    if isinstance(arguments, str):
        try:
            value = json.loads(arguments)
        except ValueError:
            return {"input": arguments}
        return value if isinstance(value, dict) else {"input": value}
    return arguments if isinstance(arguments, dict) else {}


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(str(p.get("text") or "") for p in content or [] if isinstance(p, dict) and p.get("type") == "text")


def write_item(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The Messages turns for a run of chat messages (no system message among them)."""
    turns: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        if role == "tool":
            block = {"type": "tool_result", "tool_use_id": str(message.get("tool_call_id") or ""),
                     "content": _content_text(message.get("content"))}
            if turns and turns[-1]["role"] == "user" and isinstance(turns[-1]["content"], list) and all(
                    b.get("type") == "tool_result" for b in turns[-1]["content"]):
                turns[-1]["content"].append(block)
            else:
                turns.append({"role": "user", "content": [block]})
            continue
        if role == "assistant":
            blocks: list[dict[str, Any]] = []
            if message.get("reasoning_content"):
                blocks.append({"type": "thinking", "thinking": message["reasoning_content"], "signature": ""})
            blocks += _text_blocks(message.get("content"))
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                blocks.append({"type": "tool_use", "id": str(call.get("id") or ""), "name": str(function.get("name") or ""),
                               "input": _tool_input(function.get("arguments", "{}"))})
            plain = isinstance(message.get("content"), str) and len(blocks) == 1 and blocks[0]["type"] == "text"
            turns.append({"role": "assistant", "content": message["content"] if plain else blocks})
            continue
        content = message.get("content")  # user, and a system or developer message after the first turns
        turns.append({"role": "user", "content": content if isinstance(content, str) else _text_blocks(content)})
    return turns


def write(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, params: dict[str, Any],
          original: Parsed | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {}
    if params.get("model") is not None:
        body["model"] = params["model"]
    lead = 0
    system_parts: list[dict[str, Any]] = []
    while lead < len(messages) and messages[lead].get("role") in ("system", "developer"):
        system_parts += _text_blocks(messages[lead].get("content"))
        lead += 1
    if original is not None and original.body.get("system") is not None and \
            same_messages(_system_message(original), messages[:lead]):
        body["system"] = original.body["system"]
    elif lead == 1 and isinstance(messages[0].get("content"), str):
        body["system"] = messages[0]["content"]
    elif lead:
        body["system"] = system_parts
    body["messages"] = _turns(messages[lead:], original)
    if tools:
        if original is not None and original.tools == tools and isinstance(original.body.get("tools"), list):
            body["tools"] = original.body["tools"]
        else:
            body["tools"] = [_tool(tool) for tool in tools]
    body.update({key: value for key, value in params.items() if key not in MESSAGE_FIELDS})
    return body


def _system_message(parsed: Parsed) -> list[dict[str, Any]]:
    return [m for m, source in zip(parsed.messages, parsed.sources) if source == -1]


def _turns(messages: list[dict[str, Any]], original: Parsed | None) -> list[dict[str, Any]]:
    """The turns; a run of messages that came from one wire message and is unchanged is that message as it was."""
    if original is None:
        return write_item(messages)
    groups: dict[int, list[dict[str, Any]]] = {}
    for message, source in zip(original.messages, original.sources):
        if source >= 0:
            groups.setdefault(source, []).append(message)
    out: list[dict[str, Any]] = []
    at = 0
    wire = original.body.get("messages") or []
    while at < len(messages):
        found = next((source for source, group in groups.items()
                      if same_messages(messages[at:at + len(group)], group)), None)
        if found is None:
            out += write_item([messages[at]])
            at += 1
            continue
        out.append(wire[found])
        at += len(groups.pop(found))
    return _merged(out)


def _merged(turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tool results written apart for one turn are one user turn, as Anthropic wants them."""
    out: list[dict[str, Any]] = []
    for turn in turns:
        results = isinstance(turn.get("content"), list) and turn["content"] and all(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in turn["content"])
        last = out[-1] if out else None
        if results and last is not None and last.get("role") == "user" and isinstance(last.get("content"), list) \
                and last["content"] and all(isinstance(b, dict) and b.get("type") == "tool_result" for b in last["content"]) \
                and last is not turn:
            out[-1] = {**last, "content": [*last["content"], *turn["content"]]}
        else:
            out.append(turn)
    return out


def _tool(tool: dict[str, Any]) -> dict[str, Any]:
    given = tool.get("function")
    function: dict[str, Any] = given if isinstance(given, dict) else {}
    out: dict[str, Any] = {"name": function.get("name") or ""}
    if function.get("description"):
        out["description"] = function["description"]
    out["input_schema"] = function.get("parameters") or {"type": "object", "properties": {}}
    return out
