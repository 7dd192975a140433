"""The tool calls a reply left waiting, and the tool message that answers one.

A call waits while the assistant message that made it is the last one but for tool results: once the
user writes again, the calls left unanswered are history, not questions. Every answer goes back as an
untrusted tool result (fenced in the document), whoever wrote it: the command's output, the user's hand
answer or the refusal."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from tui.context.messages import Message, Provenance, Role, Source

REFUSED_TEXT = "The user refused this tool call: it was not run."


class Resolution(StrEnum):
    ANSWERED = "answered by hand"
    RAN = "ran the command"
    REFUSED = "refused"
    UNREADABLE = "refused before review"  # its arguments read two ways: the text says why


class _KeyTwice(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: set[str] = set()
    for key, _value in pairs:
        if key in seen:
            raise _KeyTwice(key)
        seen.add(key)
    return dict(pairs)


def arguments_problem(arguments: str) -> str:
    """Why a call's arguments may not be reviewed or run ("" when they may): a key given twice in one object, at
    any depth. json.loads keeps the last, other readers the first: the reviewer, the dialog and the command would
    each see other arguments. Text that is not JSON is not judged here (it is shown and passed on as written)."""
    try:
        json.loads(arguments, object_pairs_hook=_unique_keys)
    except _KeyTwice as exc:
        return (f"its arguments give the key {json.dumps(str(exc), ensure_ascii=False)[:80]} twice in one object, "
                "so they read one way to one reader and another way to the next")
    except RecursionError:
        return "its arguments are nested too deeply to be read once, the same way by every reader"
    except ValueError:
        return ""
    return ""


def unreadable_text(problem: str) -> str:
    """The tool result of a call refused for its arguments: what the model is told, and the transcript shows."""
    return f"This tool call was refused before review and not run: {problem}."


@dataclass(frozen=True)
class PendingCall:
    id: str  # the call's id, or one made from its place when the server gave none
    name: str
    arguments: str  # as the model wrote them (JSON text, usually)
    message_id: str  # the assistant message that made the call
    index: int = 0  # its place among that message's calls
    complete: bool = True  # False: the reply was cut short, its arguments may be cut too


def call_id(call: Any, index: int) -> str:
    ident = call.get("id") if isinstance(call, dict) else None
    return ident if isinstance(ident, str) and ident else f"call_{index}"


def _function(call: Any) -> tuple[str, str]:
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict):
        return "", ""
    name, arguments = function.get("name"), function.get("arguments", "")
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False)
    return (name if isinstance(name, str) else ""), arguments


def pending_calls(messages: list[Message]) -> list[PendingCall]:
    """The calls of the last assistant message that no tool result after it answers, in the model's order."""
    answered: Counter[str] = Counter()  # two calls under one id (a server's slip) need two answers
    for message in reversed(messages):
        if message.role == Role.TOOL:
            answered[message.tool_call_id or ""] += 1
            continue
        if message.role != Role.ASSISTANT or not message.tool_calls:
            return []
        waiting = []
        for index, call in enumerate(message.tool_calls):
            ident = call_id(call, index)
            if answered[ident] > 0:
                answered[ident] -= 1
                continue
            name, arguments = _function(call)
            waiting.append(PendingCall(ident, name, arguments, message.id, index, not message.incomplete))
        return waiting
    return []


def result_message(call: PendingCall, text: str, resolution: Resolution, ident: str) -> Message:
    """The tool message for `call`: untrusted data labelled with the tool's name, whoever wrote it."""
    content = REFUSED_TEXT if resolution is Resolution.REFUSED else text
    provenance = Provenance.for_source(Source.TOOL.value, f"tool:{call.name or 'unnamed'}")
    return Message(Role.TOOL.value, content, tool_call_id=call.id, provenance=provenance, id=ident)
