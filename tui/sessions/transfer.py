"""In and out: import a request body or a JSONL of messages; export Markdown, request JSON, curl, document."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tui.context.formats import FormatError, FormatKind, kind_of_body, parse_body
from tui.context.json_types import JSONObject
from tui.context.images.tokens import family_for, image_label
from tui.context.messages import content_text, image_parts
from tui.context.assumed import assumed_template, assumed_tokenizer
from tui.context.untrusted.redaction import Redactor, credential_name
from tui.context.request_bytes import request_text
from tui.context.untrusted.visible import paste_safe

from tui.sessions.safe_io import about
from tui.sessions.model import RequestRecord, Session, SessionFormatError, now_iso
from tui.sessions.parse import session_from_dict


class TransferError(ValueError):
    """Input that cannot be imported, or a step that does not exist."""


# Body fields with a home of their own in the session (messages, tools, model, policy.max_tokens).
SESSION_FIELDS = frozenset({"messages", "tools", "model", "max_tokens"})
# Left out: the app sets streaming itself (stream_options without stream is refused by servers), and a
# session file never holds a credential.
LEFT_OUT = {"stream": "the app sets it", "stream_options": "the app sets it"}
HEADERS = frozenset({"headers", "extra_headers", "default_headers"})  # a client's headers: keys go there


@dataclass
class Imported:
    session: Session
    left_out: list[str] = field(default_factory=list)  # "name (why)", for the one line the command prints


def body_params(body: JSONObject) -> tuple[JSONObject, list[str]]:
    """Every request parameter of `body` (temperature, top_p, seed, stop, ...) kept as sent, and what was not."""
    params: JSONObject = {}
    left_out: list[str] = []
    for key, value in body.items():
        if key in SESSION_FIELDS:
            continue
        if credential_name(key) or key.lower() in HEADERS:
            left_out.append(f"{key} (may hold a credential)")
        elif Redactor().value(value, by_name=True) != value:  # a credential inside (metadata.session_token)
            left_out.append(f"{key} (holds a credential)")
        elif key in LEFT_OUT:
            left_out.append(f"{key} ({LEFT_OUT[key]})")
        else:
            params[key] = value
    return params, left_out


def import_file(path: Path, raw: bytes, wire: str | None = None) -> Imported:
    """A request body (.json: chat completions, Anthropic Messages or OpenAI Responses, told by its fields or by
    `wire`) or one message per line (.jsonl), checked like a session."""
    from tui.sessions.parse import json_value, messages_from_data, tools_from_data

    if not raw.strip():
        raise TransferError(f"{path} is empty")
    noted: list[str] = []
    body: Any  # decoded JSON: narrowed below
    try:
        if path.suffix == ".jsonl" or _several_lines_of_json(raw):
            body = {"messages": _jsonl(path, raw)}
        else:
            body = json_value(raw)
            if isinstance(body, list):
                body = {"messages": body}
        kind = FormatKind(wire) if wire else kind_of_body(body)
        if kind is not None and kind is not FormatKind.CHAT:
            body, noted = _as_chat(path, body, kind)
        if not isinstance(body, dict) or "messages" not in body:
            raise TransferError(f"{path}: expected a request body with 'messages' or a JSONL of messages")
        messages = messages_from_data(body["messages"])
        tools = tools_from_data(body.get("tools"))
    except SessionFormatError as exc:
        raise TransferError(about(path, str(exc))) from None
    model, max_tokens = body.get("model", ""), body.get("max_tokens")
    if not isinstance(model, str) or len(model) > 1000:
        raise TransferError(f"{path}: field `model`: expected a string of at most 1000 characters")
    if max_tokens is not None and (not isinstance(max_tokens, int) or isinstance(max_tokens, bool)
                                   or not 0 <= max_tokens <= 10 ** 7):
        raise TransferError(f"{path}: field `max_tokens`: expected an integer from 0 to 10000000")
    params, left_out = body_params(body)
    left_out += noted
    session = Session(title=f"Imported from {path.name}"[:1000], model=model, tools=tools, messages=messages,
                      params=params)
    template, builtin = assumed_template(model)  # the model the body names decides the family, as everywhere
    if builtin is not None:
        session.template = {"name": builtin, "origin": "builtin"}
    session.tokenizer = assumed_tokenizer(model, template)
    if max_tokens:
        session.policy = {**session.policy, "max_tokens": max_tokens}
    try:  # the gate every session file passes, so what is written here opens again (params has bounds)
        session_from_dict(session.to_dict())
    except SessionFormatError as exc:
        raise TransferError(about(path, str(exc))) from None
    return Imported(session, left_out)


def _as_chat(path: Path, body: Any, kind: FormatKind) -> tuple[JSONObject, list[str]]:
    """A Messages or Responses body as the chat-completions body of the same messages (as the server renders them,
    with their provenance), tools and the parameters chat completions has; what it has no name for is said."""
    from tui.context.formats.convert import carried_params
    try:
        parsed = parse_body(kind, body)
    except FormatError as exc:
        raise TransferError(f"{path}: {exc}") from None
    params, left = carried_params(kind, FormatKind.CHAT, parsed.params)
    chat: JSONObject = {"messages": parsed.messages, **({"model": parsed.model} if parsed.model else {}), **params}
    if parsed.tools:
        chat["tools"] = parsed.tools
    noted = [f"{key} (a {kind.title} field chat completions does not have)" for key in left if key != "stream"]
    if parsed.previous_response_id:
        noted.append("previous_response_id (the server held the context before this input: not in the file)")
    return chat, noted


def _several_lines_of_json(raw: bytes) -> bool:
    """A file of more than one JSON value, one per line (JSONL saved as .json)."""
    from tui.sessions.parse import json_value

    lines = [line for line in raw.splitlines() if line.strip()]
    if len(lines) < 2:
        return False
    try:
        json_value(lines[0])
    except SessionFormatError:
        return False
    try:
        json_value(raw)
    except SessionFormatError:
        return True
    return False


def _jsonl(path: Path, raw: bytes) -> list[Any]:
    from tui.sessions.parse import json_value

    items = []
    for number, line in enumerate(raw.splitlines(), start=1):
        if line.strip():
            try:
                items.append(json_value(line))
            except SessionFormatError as exc:
                raise TransferError(about(f"{path}, line {number}", str(exc))) from None
    return items


def step_record(session: Session, step: int | None) -> RequestRecord:
    if not session.requests:
        raise TransferError("the session has no requests yet")
    index = len(session.requests) if step is None else step
    if not 1 <= index <= len(session.requests):
        raise TransferError(f"no step {index}: the session has {len(session.requests)} requests (1-{len(session.requests)})")
    return session.requests[index - 1]


def export_markdown(session: Session) -> str:
    lines = [f"# {session.title}", "", f"- model: {session.model or '?'} at {session.base_url or '?'}",
             f"- template: {session.template.get('name')}, tokenizer: {session.tokenizer or '?'}",
             f"- requests: {len(session.requests)}",
             *([f"- branches: {len(session.branches)} other continuations are kept in the session file; this is "
                "the one shown"] if session.branches else []), ""]
    for index, message in enumerate(session.messages):
        prov = message.provenance
        tag = "" if prov.trusted else f" (untrusted: {prov.label or prov.source})"
        state = (" · pinned" if message.pinned else "") + (" · incomplete (cut short)" if message.incomplete else "")
        lines.append(f"## {index}. {message.role}{tag}{state}")
        lines.append("")
        if message.reasoning_content:
            lines += ["<details><summary>reasoning</summary>", "", _fence(message.reasoning_content), "", "</details>", ""]
        lines += [f"{image_label(part, family_for(session.model))} (the image data is in the session file)" for part in
                  image_parts(message.content)] + ([""] if image_parts(message.content) else [])
        text = content_text(message.content)
        if text:
            lines += [_fence(text), ""]
        for call in message.tool_calls or []:
            function = call.get("function", {})
            lines += [f"tool call `{function.get('name', '?')}`:", "", _fence(str(function.get("arguments", "")),
                                                                              "json"), ""]
    return "\n".join(lines)


def _fence(text: str, language: str = "text") -> str:
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}{language}\n{text}\n{ticks}"


def export_request(session: Session, step: int | None, wire: str | None = None) -> str:
    """The body of a step as the bytes that were sent (compact JSON: `jq .` pretty-prints it; a tapped request's are
    the client's own bytes, as the session file keeps them); with `wire`, the same request written in that API's
    format (chat, messages, responses)."""
    return converted_request(session, step, wire)[0]


def converted_request(session: Session, step: int | None, wire: str | None = None) -> tuple[str, list[str]]:
    """export_request's text, and the body's fields the `wire` format has no name for (left out of it)."""
    record = step_record(session, step)
    if wire is None or wire == record.format:
        return record.exact_text() or request_text(record.body), []
    from tui.context.formats.convert import rewritten
    try:
        body, left = rewritten(FormatKind(record.format), record.body, FormatKind(wire))
    except FormatError as exc:
        raise TransferError(f"step {record.number}: {exc}") from None
    return request_text(body), left


def curl_command(url: str, body: JSONObject, key_env: str) -> str:
    """The request as a curl command a shell can run and a terminal can paste: the key named by its variable,
    never written out; no control character in it (the JSON keeps its value, the URL gets stand-ins)."""
    data = request_text(body)  # the bytes the app sends
    if not ENV_NAME.fullmatch(key_env):  # a name from a file or a flag: never shell syntax in the command
        key_env = "OPENAI_API_KEY"
    # --url: a URL that starts with "-" is not an option; --globoff: its [] and {} are not curl's globs
    auth = (f"  -H \"x-api-key: ${key_env}\" \\\n  -H 'anthropic-version: 2023-06-01' \\\n"
            if url.rstrip("/").endswith("/messages") else f"  -H \"Authorization: Bearer ${key_env}\" \\\n")
    head = f"curl --globoff --url {shlex.quote(url)} \\\n  -H 'Content-Type: application/json' \\\n{auth}"
    if len(data) <= ARGUMENT_LIMIT:
        return paste_safe(f"{head}  -d {shlex.quote(data)}")[0]
    # One argument may hold at most 128 KiB (Linux): a larger body (an image) is read from a here-document, which
    # ends it with one newline more. The body is one line of JSON: it can never be the delimiter line.
    return paste_safe(f"{head}  --data-binary @- <<'{HEREDOC}'\n{data}\n{HEREDOC}")[0]


ARGUMENT_LIMIT = 64 * 1024  # characters of a body passed as one -d argument
HEREDOC = "CTXPANE_REQUEST_BODY"


ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


def export_curl(session: Session, step: int | None, key_env: str = "OPENAI_API_KEY") -> str:
    """The step as a curl command: a tapped request as its client sent it (path, query, headers and body bytes,
    sent_curl.py), any other as the app sends it."""
    record = step_record(session, step)
    base = session.base_url or "http://127.0.0.1:8080/v1"
    if record.sent is not None:
        from tui.sessions.sent_curl import sent_curl

        return sent_curl(base, record.sent, record.exact_text() or request_text(record.body),
                         key_env if ENV_NAME.fullmatch(key_env) else "OPENAI_API_KEY")
    return curl_command(base.rstrip("/") + FormatKind(record.format).path, record.body, key_env)


def new_title(session: Session, suffix: str) -> str:
    tail = f" ({suffix} {now_iso()[:16]})"
    return session.title[:1000 - len(tail)] + tail  # a title stays within the schema's 1,000 characters


def resend_session(session: Session, step: int) -> Session:
    """A new session holding the conversation as it was at `step`, ready to send again (the old one stays)."""
    record = step_record(session, step)
    count = record.message_count or len(session.messages)
    data = session.to_dict(requests=False)  # (the copy has none: no body of the session is rebuilt)
    copy = session_from_dict({**data, "requests": [], "id": Session().id, "title": new_title(session, "re-sent")})
    copy.messages = copy.messages[:count]
    if not copy.messages:
        raise SessionFormatError("that step has no messages to send again")
    return copy
