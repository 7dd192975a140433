"""doctor's look at the other APIs a server offers (llama.cpp serves all three): the sample conversation sent as an
Anthropic Messages and an OpenAI Responses request, each one's prompt count (as that API reports it) against the
chat-completions count of the same conversation and against ctxpane's rendering of that body."""

from __future__ import annotations

from typing import Any

from tui.client.doctor.report import Check
from tui.client.errors import ClientError
from tui.client.http import OpenAIClient
from tui.context.assemble import assemble
from tui.context.formats import FormatKind, parse_body
from tui.context.formats.convert import wire_request
from tui.context.formats.replies import Translator
from tui.context.messages import Message, message_from_dict
from tui.context.templates.library import ChatTemplate

APIS = (FormatKind.MESSAGES, FormatKind.RESPONSES)


def reported_prompt(kind: FormatKind, answer: Any) -> int | None:
    """The prompt tokens an API's answer reports (Messages: input + cache reads + cache writes)."""
    usage = Translator(kind).whole(answer).get("usage")
    return usage.get("prompt_tokens") if isinstance(usage, dict) else None


def engine_count(kind: FormatKind, body: dict[str, Any], template: ChatTemplate, tokenizer: Any) -> int:
    parsed = parse_body(kind, body)
    wire = [message_from_dict(m, i).to_wire() for i, m in enumerate(parsed.messages)]  # as the chat path sends them
    messages: list[Message | dict[Any, Any]] = list(wire)
    return assemble(messages, template, tokenizer, tools=parsed.tools).counts.total  # as the server reads them


async def check_apis(client: OpenAIClient, sample: list[dict[str, Any]], tools: list[dict[str, Any]],
                     template: ChatTemplate, tokenizer: Any, chat_count: int | None) -> list[Check]:
    checks = []
    chat = {"model": client.endpoint.model or "model", "messages": sample, "tools": tools, "max_tokens": 1,
            "temperature": 0}
    for kind in APIS:
        name = f"{kind.title} ({kind.path})"
        body = wire_request(chat, kind.value)
        try:
            answer = await client.post_json(kind.path, body, key_style="anthropic" if kind is FormatKind.MESSAGES
                                            else "")
        except ClientError as exc:
            if getattr(exc, "status", None) in (404, 405, 501):
                checks.append(Check(name, "skip", "the server does not offer it"))
            else:
                checks.append(Check(name, "warn", f"the server refused the sample: {str(exc)[:300]}"))
            continue
        served = reported_prompt(kind, answer)
        ours = engine_count(kind, body, template, tokenizer)
        data = {"api": kind.value, "usage_prompt_tokens": served, "engine": ours, "chat_prompt_tokens": chat_count}
        if served is None:
            checks.append(Check(name, "warn", "its answer reports no prompt count", data))
        elif served == ours == chat_count:
            checks.append(Check(name, "ok", f"usage {served} = engine {ours} = chat completions {chat_count}: the same "
                                            "document as chat completions", data))
        elif served == ours:
            checks.append(Check(name, "ok", f"usage {served} = engine {ours}; chat completions {chat_count}: the "
                                            "server renders this API's conversion of the conversation otherwise "
                                            "(what the format carries, or drops)", data))
        else:
            checks.append(Check(name, "fail", f"usage {served}, engine {ours} (chat completions {chat_count}): "
                                              "ctxpane's reading of this API differs from the server's", data))
    return checks
