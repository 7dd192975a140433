"""A session as it may be written to a file: secrets out, by the rules of tui/context/redaction.py.

What people wrote is kept as written: the messages, the title made from them, the tools and variables a
harness wrote, and inside each request the messages (or input, system, instructions …) of its body, the reply's
content, reasoning and tool calls, and the ledger's quotes. Everything else is searched for secret-shaped keys;
a request body's credential-named fields (`api_key`, `metadata.session_token`) and the URL's credentials are
masked whatever they hold.
"""

from __future__ import annotations

from typing import Any, Iterable

from tui.context.redaction import Redactor, bearer_tokens_masked, redact_url

WORDS = frozenset({"title", "messages", "tools", "variables"})
BODY_WORDS = frozenset({"messages", "input", "instructions", "system", "prompt", "contents", "tools", "functions",
                        "response_format", "tool_choice"})
REPLY_WORDS = frozenset({"content", "reasoning", "reasoning_content", "tool_calls", "refusal"})
REQUEST_WORDS = frozenset({"dropped"})


def _is_words(path: tuple) -> bool:
    if len(path) == 1:
        return path[0] in WORDS
    if len(path) >= 3 and path[0] == "requests":
        part = path[2]
        if part in REQUEST_WORDS:
            return True
        if len(path) == 4 and part == "body":
            return path[3] in BODY_WORDS
        if len(path) == 4 and part == "reply":
            return path[3] in REPLY_WORDS
    return False


def redacted_session(data: dict[str, Any], secrets: Iterable[str]) -> dict[str, Any]:
    """A copy of a session's dict (Session.to_dict) with its secrets out and its words untouched."""
    redactor = Redactor(secrets)
    out = redactor.value(data, _is_words)
    endpoint = out.get("endpoint")
    if isinstance(endpoint, dict) and isinstance(endpoint.get("base_url"), str):
        endpoint["base_url"] = redact_url(endpoint["base_url"])
    out["params"] = redactor.value(data.get("params") or {}, by_name=True)
    for request in out.get("requests") or []:
        if isinstance(request.get("body"), dict):
            request["body"] = redactor.value(request["body"], lambda path: len(path) == 1 and path[0] in BODY_WORDS,
                                             by_name=True)
        reply = request.get("reply")
        if isinstance(reply, dict) and isinstance(reply.get("error"), str):
            reply["error"] = bearer_tokens_masked(reply["error"])
    return out
