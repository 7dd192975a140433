"""What providers require of reasoning sent back, as data: a note when the active model or endpoint matches.

Each rule names the models (a regular expression on the model name) or endpoints (on the base URL's
host) it applies to, and when: always, only when a turn of the conversation carries reasoning, or only
when the conversation calls tools. Worked examples are in tests/test_hidden_tokens.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from tui.context.messages import Message


@dataclass(frozen=True)
class ReasoningRule:
    name: str
    model: str  # regular expression searched in the lowered model name ("" matches no model)
    host: str  # regular expression searched in the base URL's host ("" matches no host)
    when: str  # "always", "reasoning" (a turn carries reasoning) or "tools" (a turn calls tools)
    note: str


RULES: tuple[ReasoningRule, ...] = (
    ReasoningRule("anthropic-thinking", r"claude", r"(^|\.)anthropic\.com$", "tools",
                  "Anthropic: with extended thinking and tool use, the thinking blocks of the assistant turn that "
                  "called the tools must be sent back unchanged (with their signatures) until the tool results "
                  "are answered; thinking of earlier turns is left out by the API and not counted"),
    ReasoningRule("deepseek-reasoner", r"deepseek-reasoner|deepseek-r1", r"(^|\.)deepseek\.com$", "reasoning",
                  "DeepSeek reasoner: reasoning_content must not be sent back in input messages (the API refuses "
                  "the request with a 400); send earlier turns without it"),
    ReasoningRule("openai-reasoning", r"(^|[/:])(o1|o3|o4)(-|$)|gpt-5", "", "always",
                  "OpenAI reasoning models: the reasoning is hidden and billed as output tokens; across tool calls "
                  "the Responses API needs its reasoning items passed back (or previous_response_id), which Chat "
                  "Completions does not carry"),
)


def _host(base_url: str) -> str:
    try:
        return (urlsplit(base_url or "").hostname or "").lower()
    except ValueError:
        return ""


def matching_rules(model: str, base_url: str, messages: list[Message]) -> list[ReasoningRule]:
    """The rules that apply to this model and endpoint, given what the conversation holds."""
    lowered, host = (model or "").lower(), _host(base_url)
    reasoning = any(m.role == "assistant" and (m.reasoning_content or "<think>" in m.text()) for m in messages)
    tools = any(m.tool_calls for m in messages) or any(m.role == "tool" for m in messages)
    found = []
    for rule in RULES:
        named = bool(rule.model and re.search(rule.model, lowered)) or bool(rule.host and re.search(rule.host, host))
        if named and (rule.when == "always" or (rule.when == "reasoning" and reasoning)
                      or (rule.when == "tools" and tools)):
            found.append(rule)
    return found


def reasoning_notes(model: str, base_url: str, messages: list[Message]) -> list[str]:
    return [rule.note for rule in matching_rules(model, base_url, messages)]
