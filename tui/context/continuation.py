"""A last assistant message continued, not closed: the Messages API's prefill, as llama.cpp's server renders it.

Anthropic's API and llama.cpp's server both read a conversation that ends in an assistant turn as the start of the
reply. The server renders the messages with that turn's text replaced by a marker and no generation prompt, cuts
the prompt where the marker begins and writes the turn's own text there: the template's opening of the turn stays
(Qwen3's empty think block), its end of turn does not. A last turn with neither text nor reasoning is left out, with
no generation prompt. Measured against the real server (b11669, Qwen3): plain text, reasoning with text, reasoning
alone, leading newlines, an empty turn.
"""

from __future__ import annotations

from typing import Any, Callable

HOLE = "\x00ctxpane: the continued text\x00"  # never in a message: the template writes it where the text goes

Render = Callable[..., str]


def continues(messages: list[Any]) -> bool:
    """Whether the last message is an assistant turn the server continues (one with tool calls it refuses)."""
    last = messages[-1] if messages else None
    return isinstance(last, dict) and last.get("role") == "assistant" and not last.get("tool_calls") \
        and len(messages) > 1


def continued(render: Render) -> Render:
    """`render`, continuing the last assistant message of what it is given (the true and the marked messages)."""
    def go(messages: list[Any], **variables: Any) -> str:
        *before, last = messages
        last = joined_for_continuation(last)
        text, reasoning = last.get("content"), last.get("reasoning_content")
        if not isinstance(text, str) or reasoning is not None and not isinstance(reasoning, str):
            return render(messages, **variables)  # parts the server would not write as text: as the template has it
        variables = {**variables, "add_generation_prompt": False}
        if not text and not reasoning:
            return render(before, **variables)
        field, own = ("content", text) if text else ("reasoning_content", reasoning or "")
        shown = render([*before, {**last, field: HOLE}], **variables)
        at = shown.rfind(HOLE)
        if at < 0:  # a template that does not write the turn's text: as it renders it
            return render(messages, **variables)
        return shown[:at] + own
    return go


def joined_for_continuation(message: dict[str, Any]) -> dict[str, Any]:
    """The last turn's text parts as the server writes a continued turn: joined by a blank line."""
    content = message.get("content")
    if isinstance(content, list) and content and all(isinstance(p, dict) and p.get("type") == "text" for p in content):
        return {**message, "content": "\n\n".join(str(p.get("text") or "") for p in content)}
    return message
