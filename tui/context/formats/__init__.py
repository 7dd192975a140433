"""Wire formats: the request bodies of chat completions, Anthropic's Messages API and OpenAI's Responses API.

The one rule: a body in, the engine's messages out (and back), and nothing else: pure functions of JSON values,
no server, no file, no clock. Each format is parsed into the chat-completions messages the server renders (the
conversion llama.cpp's server makes, so the document and its count are the server's), with their provenance
(tool results untrusted) and hidden parts (reasoning, tool schemas, images), and what chat completions cannot
carry (system blocks, `cache_control` breakpoints, Responses items and ids, `previous_response_id`, `store`) kept
beside them; `write_body` writes messages back as a body of any format, an item unchanged since it was parsed as
the very item it was. Bodies come from outside: each is checked against its msgspec schema, with bounds, first.
"""

from __future__ import annotations

from typing import Any

from tui.context.formats.kinds import FormatError, FormatKind, kind_of_path, kind_of_body
from tui.context.formats.parsed import Breakpoint, Parsed


def parse_body(kind: FormatKind, body: Any) -> Parsed:
    """The body's messages, tools and extras; FormatError (one line) when it is not a body of that format.
    (The schemas load msgspec: imported when a body is first read, not with the package.)"""
    from tui.context.formats.convert import parse_body as parse
    return parse(kind, body)


def write_body(kind: FormatKind, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None,
               params: dict[str, Any] | None = None, original: Parsed | None = None) -> dict[str, Any]:
    """A body of `kind` carrying `messages` and `tools` (see convert.write_body)."""
    from tui.context.formats.convert import write_body as write
    return write(kind, messages, tools, params, original)

__all__ = ["Breakpoint", "FormatError", "FormatKind", "Parsed", "kind_of_body", "kind_of_path", "parse_body",
           "write_body"]
