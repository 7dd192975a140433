"""The shapes of Messages and Responses request bodies, typed and bounded (msgspec), checked before parsing.

Only what the parse reads is typed; other fields pass (a client's extensions are forwarded and kept). A wrong
type, a list past its bound or a body nested deeper than MAX_DEPTH is one line naming where.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta, Struct

from tui.context.formats.kinds import FormatError

MAX_TEXT = 32 * 1024 * 1024  # characters of one text (a session's bound)
MAX_ITEMS = 100_000  # messages or input items in one body
MAX_BLOCKS = 10_000  # content blocks in one message
MAX_TOOLS = 1_000
MAX_DEPTH = 64  # nesting of arrays and objects in a body (a session file's bound)

Text = Annotated[str, Meta(max_length=MAX_TEXT)]
Short = Annotated[str, Meta(max_length=4096)]
Free = dict[str, Any]
Tokens = Annotated[int, Meta(ge=0, le=10 ** 8)]


# -- Anthropic Messages ----------------------------------------------------------------------------------
class CacheControl(Struct):
    type: Literal["ephemeral"]
    ttl: Literal["5m", "1h"] | None = None


class Source(Struct):
    type: Short
    media_type: Short | None = None
    data: Text | None = None
    url: Text | None = None


class InnerBlock(Struct):  # a block inside a tool_result's content
    type: Short
    text: Text | None = None
    source: Source | None = None
    cache_control: CacheControl | None = None


InnerBlocks = Annotated[list[InnerBlock], Meta(max_length=MAX_BLOCKS)]


class Block(Struct):
    type: Short
    text: Text | None = None
    thinking: Text | None = None
    signature: Text | None = None
    data: Text | None = None
    id: Short | None = None
    name: Short | None = None
    input: Free | None = None
    tool_use_id: Short | None = None
    content: Text | InnerBlocks | None = None
    source: Source | None = None
    is_error: bool | None = None
    cache_control: CacheControl | None = None


Blocks = Annotated[list[Block], Meta(max_length=MAX_BLOCKS)]


class AnthropicMessage(Struct):
    # "system": Claude Code sends its environment as a system turn among the messages; llama.cpp takes it as one
    role: Literal["user", "assistant", "system"]
    content: Text | Blocks


class SystemBlock(Struct):
    type: Short
    text: Text = ""
    cache_control: CacheControl | None = None


class AnthropicTool(Struct):
    name: Short
    type: Short | None = None
    description: Text | None = None
    input_schema: Free | None = None
    cache_control: CacheControl | None = None


class MessagesBody(Struct):
    messages: Annotated[list[AnthropicMessage], Meta(max_length=MAX_ITEMS)]
    model: Short = ""
    system: Text | Annotated[list[SystemBlock], Meta(max_length=MAX_BLOCKS)] | None = None
    tools: Annotated[list[AnthropicTool], Meta(max_length=MAX_TOOLS)] | None = None
    max_tokens: Tokens | None = None
    stream: bool | None = None


# -- OpenAI Responses ------------------------------------------------------------------------------------
class Part(Struct):
    type: Short
    text: Text | None = None
    image_url: Text | None = None


Parts = Annotated[list[Part], Meta(max_length=MAX_BLOCKS)]


class Item(Struct):
    type: Short | None = None
    role: Literal["user", "assistant", "system", "developer"] | None = None
    content: Text | Parts | None = None
    id: Short | None = None
    status: Short | None = None
    call_id: Short | None = None
    name: Short | None = None
    arguments: Text | None = None
    output: Text | Parts | None = None
    summary: Annotated[list[Free], Meta(max_length=MAX_BLOCKS)] | None = None


class ResponsesTool(Struct):
    type: Short
    name: Short | None = None
    description: Text | None = None
    parameters: Free | None = None
    strict: bool | None = None


class ResponsesBody(Struct):
    input: Text | Annotated[list[Item], Meta(max_length=MAX_ITEMS)]
    model: Short = ""
    instructions: Text | None = None
    tools: Annotated[list[ResponsesTool], Meta(max_length=MAX_TOOLS)] | None = None
    previous_response_id: Short | None = None
    store: bool | None = None
    max_output_tokens: Tokens | None = None
    stream: bool | None = None


# -- chat completions (the session schema checks their messages in full) -----------------------------------
class ChatMessage(Struct):
    role: Short


class ChatBody(Struct):
    messages: Annotated[list[ChatMessage], Meta(max_length=MAX_ITEMS)] = []
    model: Short = ""
    tools: Annotated[list[Free], Meta(max_length=MAX_TOOLS)] | None = None


def depth_problem(value: Any, limit: int = MAX_DEPTH) -> str:
    """'' when `value` nests at most `limit` arrays and objects, else where it goes deeper (iterative: any depth)."""
    stack: list[tuple[Any, int, str]] = [(value, 1, "$")]
    while stack:
        item, depth, where = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > limit:
                shown = where if len(where) <= 80 else where[:60] + "…"
                return f"nested deeper than {limit} levels - at `{shown}`"
            pairs = item.items() if isinstance(item, dict) else enumerate(item)
            for key, child in pairs:
                if isinstance(child, (dict, list)):
                    stack.append((child, depth + 1, f"{where}.{key}" if isinstance(key, str) else f"{where}[{key}]"))
    return ""


def check(body: Any, shape: type[Struct], what: str) -> None:
    """Raise FormatError (one line: what is wrong, and where) unless `body` fits `shape`."""
    if not isinstance(body, dict):
        raise FormatError(f"{what}: expected a JSON object, got {type(body).__name__}")
    problem = depth_problem(body)
    if problem:
        raise FormatError(f"{what}: {problem}")
    try:
        msgspec.convert(body, shape)
    except msgspec.ValidationError as exc:
        raise FormatError(f"{what}: {str(exc)[:300]}") from None
