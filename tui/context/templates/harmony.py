"""The gpt-oss "harmony" format, rendered as OpenAI's `openai-harmony` library renders it.

The model card's Jinja template disagrees with the library in a few places (blank lines after
the developer instructions, `<|constrain|>` on tool calls, tool results re-encoded as JSON strings,
reasoning kept on the last turn). We follow the library: it is the encoder OpenAI trained and
serves gpt-oss with, and servers such as vLLM use it for their prompts.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from tui.context.json_types import JSONObject, WireMessage
from tui.context.messages import content_text

DEFAULT_IDENTITY = "You are ChatGPT, a large language model trained by OpenAI."
KNOWLEDGE_CUTOFF = "2024-06"
CHANNELS_LINE = "# Valid channels: analysis, commentary, final. Channel must be included for every message."
SPECIAL_TOKENS = ("<|start|>", "<|message|>", "<|end|>", "<|channel|>", "<|return|>", "<|call|>",
                  "<|constrain|>", "<|startoftext|>", "<|endoftext|>")


def _block(header: str, body: str, end: str = "<|end|>") -> str:
    return f"<|start|>{header}<|message|>{body}{end}"


def ts_type(spec: JSONObject) -> str:
    """A JSON-schema type as the TypeScript-like text harmony shows the model."""
    kind = spec.get("type")
    if spec.get("enum"):
        return " | ".join(json.dumps(v, ensure_ascii=False) for v in spec["enum"])
    if isinstance(kind, list):
        return " | ".join(str(k) for k in kind)
    if kind == "array":
        items = spec.get("items")
        return f"{ts_type(items)}[]" if isinstance(items, dict) and items else "any[]"
    if kind == "object":
        props = spec.get("properties") or {}
        if not props:
            return "object"
        return "{\n" + "".join(_ts_field(n, s, spec.get("required") or []) for n, s in props.items()) + "}"
    if kind is None:
        return "any"
    return {"string": "string", "number": "number", "integer": "number", "boolean": "boolean",
            "null": "null"}.get(kind, "any")


def _ts_field(name: str, spec: JSONObject, required: list[str]) -> str:
    comment = f"// {spec['description']}\n" if spec.get("description") else ""
    optional = "" if name in required else "?"
    default = f", // default: {json.dumps(spec['default'], ensure_ascii=False)}" if "default" in spec else ""
    return f"{comment}{name}{optional}: {ts_type(spec)},{default}\n"


def tools_namespace(tools: list[JSONObject]) -> str:
    lines = ["## functions\n\nnamespace functions {\n\n"]
    for tool in tools:
        fn = tool.get("function", tool)
        if fn.get("description"):
            lines.append(f"// {fn['description']}\n")
        params = fn.get("parameters") or {}
        props = params.get("properties") or {}
        if props:
            fields = "".join(_ts_field(n, s, params.get("required") or []) for n, s in props.items())
            lines.append(f"type {fn['name']} = (_: {{\n{fields}}}) => any;\n\n")
        else:
            lines.append(f"type {fn['name']} = () => any;\n\n")
    lines.append("} // namespace functions")
    return "".join(lines)


def system_block(variables: dict[str, Any]) -> str:
    identity = variables.get("model_identity") or DEFAULT_IDENTITY
    date = variables.get("current_date") or datetime.now().strftime("%Y-%m-%d")
    effort = variables.get("reasoning_effort") or "medium"
    body = (f"{identity}\nKnowledge cutoff: {KNOWLEDGE_CUTOFF}\nCurrent date: {date}\n\n"
            f"Reasoning: {effort}\n\n{CHANNELS_LINE}")
    if variables.get("tools"):
        body += "\nCalls to these tools must go to the commentary channel: 'functions'."
    return _block("system", body)


def developer_block(instructions: str, tools: list[JSONObject] | None) -> str:
    parts: list[str] = []
    if instructions:
        parts.append(f"# Instructions\n\n{instructions}")
    if tools:
        parts.append("# Tools\n\n" + tools_namespace(tools))
    return _block("developer", "\n\n".join(parts)) if parts else ""


def _arguments_text(arguments: Any) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)


def _tool_names(messages: list[WireMessage]) -> dict[str, str]:
    names: dict[str, str] = {}
    for message in messages:
        for call in message.get("tool_calls") or []:
            names[call.get("id", "")] = call.get("function", {}).get("name", "")
    return names


def render_harmony(messages: list[WireMessage], **variables: Any) -> str:
    """Render a conversation in harmony, like openai-harmony's render_conversation.

    A final assistant message at the end closes with `<|return|>` (the library's rendering for
    training); analysis (reasoning) before the last final message is dropped, as the library does.
    """
    tools = variables.get("tools")
    out = [system_block(variables)]
    instructions = next((content_text(m.get("content")) for m in messages
                         if m.get("role") in ("system", "developer")), "")
    out.append(developer_block(instructions, tools))
    last_final = max((i for i, m in enumerate(messages)
                      if m.get("role") == "assistant" and not m.get("tool_calls")), default=-1)
    call_names = _tool_names(messages)
    for index, message in enumerate(messages):
        out.append(_render_message(message, index, last_final, len(messages), call_names))
    if variables.get("add_generation_prompt"):
        out.append("<|start|>assistant")
    return "".join(out)


def _render_message(message: WireMessage, index: int, last_final: int, count: int,
                    call_names: dict[str, str]) -> str:
    role = message.get("role")
    text = content_text(message.get("content"))
    if role in ("system", "developer"):
        return ""
    if role == "user":
        return _block("user", text)
    if role == "tool":
        name = message.get("name") or call_names.get(message.get("tool_call_id", ""), "tool")
        return _block(f"functions.{name} to=assistant<|channel|>commentary", text)
    parts: list[str] = []
    reasoning = message.get("reasoning_content") or message.get("thinking")
    if reasoning and index > last_final:
        parts.append(_block("assistant<|channel|>analysis", reasoning))
    calls = message.get("tool_calls") or []
    if text or not calls:
        end = "<|return|>" if index == count - 1 and not calls else "<|end|>"
        parts.append(_block("assistant<|channel|>final", text, end))
    for call in calls:
        fn = call.get("function", {})
        header = f"assistant to=functions.{fn.get('name', '')}<|channel|>commentary <|constrain|>json"
        parts.append(_block(header, _arguments_text(fn.get("arguments", "")), "<|call|>"))
    return "".join(parts)
