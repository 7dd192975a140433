"""In and out: import a request body or a JSONL of messages; export Markdown, request JSON, curl, document."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from tui.context.messages import MessageError, content_text, message_from_dict

from .model import RequestRecord, Session, SessionFormatError, now_iso, session_from_dict


class TransferError(ValueError):
    """Input that cannot be imported, or a step that does not exist."""


def import_file(path: Path, text: str) -> Session:
    """An OpenAI chat-completions request body (.json) or one message per line (.jsonl)."""
    stripped = text.strip()
    if not stripped:
        raise TransferError(f"{path} is empty")
    if path.suffix == ".jsonl" or not _is_single_json(stripped):
        body = {"messages": _jsonl(path, stripped)}
    else:
        body = json.loads(stripped)
        if isinstance(body, list):
            body = {"messages": body}
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        raise TransferError(f"{path}: expected a request body with 'messages' or a JSONL of messages")
    try:
        messages = [message_from_dict(item, i) for i, item in enumerate(body["messages"])]
    except MessageError as exc:
        raise TransferError(f"{path}: {exc}") from None
    tools = body.get("tools")
    if tools is not None and not isinstance(tools, list):
        raise TransferError(f"{path}: 'tools' must be a list")
    session = Session(title=f"Imported from {path.name}", model=str(body.get("model", "")), tools=tools,
                      messages=messages)
    if body.get("max_tokens"):
        session.policy = {**session.policy, "max_tokens": int(body["max_tokens"])}
    return session


def _is_single_json(text: str) -> bool:
    try:
        json.loads(text)
        return True
    except json.JSONDecodeError:
        return False


def _jsonl(path: Path, text: str) -> list:
    items = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                items.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise TransferError(f"{path}, line {number}: not JSON ({exc.msg})") from None
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
             f"- requests: {len(session.requests)}", ""]
    for index, message in enumerate(session.messages):
        prov = message.provenance
        tag = "" if prov.trusted else f" (untrusted: {prov.label or prov.source})"
        lines.append(f"## {index}. {message.role}{tag}{' · pinned' if message.pinned else ''}")
        lines.append("")
        if message.reasoning_content:
            lines += ["<details><summary>reasoning</summary>", "", _fence(message.reasoning_content), "", "</details>", ""]
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


def export_request(session: Session, step: int | None) -> str:
    return json.dumps(step_record(session, step).body, ensure_ascii=False, indent=2)


def export_curl(session: Session, step: int | None, key_env: str = "OPENAI_API_KEY") -> str:
    body = step_record(session, step).body
    url = (session.base_url or "http://127.0.0.1:8080/v1").rstrip("/") + "/chat/completions"
    return (f"curl {shlex.quote(url)} \\\n  -H 'Content-Type: application/json' \\\n"
            f"  -H \"Authorization: Bearer ${key_env}\" \\\n  -d {shlex.quote(json.dumps(body, ensure_ascii=False))}")


def new_title(session: Session, suffix: str) -> str:
    return f"{session.title} ({suffix} {now_iso()[:16]})"


def resend_session(session: Session, step: int) -> Session:
    """A new session holding the conversation as it was at `step`, ready to send again (the old one stays)."""
    record = step_record(session, step)
    count = record.message_count or len(session.messages)
    data = session.to_dict()
    copy = session_from_dict({**data, "requests": [], "id": Session().id, "title": new_title(session, "re-sent")})
    copy.messages = copy.messages[:count]
    if not copy.messages:
        raise SessionFormatError("that step has no messages to send again")
    return copy
