"""A session as it may be written to a file: secrets out, by the rules of tui/context/untrusted/redaction.py.

What people wrote is kept as written: the messages, the tools a harness wrote, and
inside each request the messages (or input, system, instructions …) of its body and the reply's content,
reasoning and tool calls. A request body's credential fields (`api_key`, `metadata.session_token`, whatever
they hold) and key-shaped values are masked, and so are the URL's credentials. Known keys are searched for
only in the texts a server wrote (a reply's error, the raw bytes of its stream): never in a field the session
schema constrains (ids, hashes, names), so no key of any shape can make a file unreadable; and in the title,
which is made from the first message but shown on every screen; and in the draft, the composer's text never
sent (every key the process holds, and any fragment of one, as the prompt history masks them).
"""

from __future__ import annotations

from typing import Any, Iterable

from tui.context.json_types import JSONObject

from tui.client.keys import held_keys
from tui.context.untrusted.redaction import JSONPath, Redactor, bearer_tokens_masked, known_secrets_masked, redact_url

BODY_WORDS = frozenset({"messages", "input", "instructions", "system", "prompt", "contents", "tools", "functions",
                        "response_format", "tool_choice"})
SERVER_TEXTS = (("error",), ("stream", "raw"), ("stream", "error"))  # in a request's reply


def outside_words(path: JSONPath) -> bool:
    """For Redactor.value over a request body: skip its words (the messages, the tools)."""
    return len(path) == 1 and path[0] in BODY_WORDS


def redacted_session(data: dict[str, Any], secrets: Iterable[str]) -> dict[str, Any]:
    """A copy of a session's dict (Session.to_dict) with its secrets out and its words untouched; what it
    does not change is shared with `data`, never modified."""
    secrets = list(secrets)
    redactor = Redactor(secrets)
    out = dict(data)
    endpoint = data.get("endpoint")
    if isinstance(endpoint, dict) and isinstance(endpoint.get("base_url"), str):
        out["endpoint"] = {**endpoint, "base_url": redact_url(endpoint["base_url"])}
    if isinstance(data.get("params"), dict):
        out["params"] = redactor.value(data["params"], by_name=True)
    if isinstance(data.get("title"), str):  # made from the first message, but shown everywhere: no key in it
        out["title"] = redactor.text(data["title"])
    if isinstance(data.get("draft"), str):  # typed, never sent nor reviewed: masked as the prompt history is
        out["draft"] = known_secrets_masked(data["draft"], {*secrets, *held_keys()})
    out["requests"] = [redacted_request(request, redactor) for request in data.get("requests") or []]
    return out


def redacted_request(request: JSONObject, redactor: Redactor) -> JSONObject:
    """One request record (a dict) with its secrets out: its body's credential fields, keys in the server's texts."""
    request = dict(request)
    if isinstance(request.get("body"), dict):
        request["body"] = redactor.value(request["body"], outside_words, by_name=True)
    reply = request.get("reply")
    if isinstance(reply, dict):
        reply = request["reply"] = dict(reply)
        if isinstance(reply.get("stream"), dict):
            reply["stream"] = dict(reply["stream"])
        for path in SERVER_TEXTS:
            holder = reply if len(path) == 1 else reply.get(path[0])
            if isinstance(holder, dict) and isinstance(holder.get(path[-1]), str):
                holder[path[-1]] = redactor.text(holder[path[-1]])
        if isinstance(reply.get("error"), str):
            reply["error"] = bearer_tokens_masked(reply["error"])
    return request
