"""Reading what the user gives on the command line, with one clear error line for anything wrong."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tui.errors import UsageError
from tui.context.messages import Message, MessageError, messages_from_list
from tui.context.template_library import ChatTemplate, TemplateNotFound, load_template
from tui.context.tokens import Tokenizer, TokenizerNotFound, get_tokenizer

MAX_INPUT_BYTES = 64 * 1024 * 1024


def read_json_file(path_text: str, what: str = "file") -> Any:
    path = Path(path_text).expanduser()
    if not path.exists():
        raise UsageError(f"{what} not found: {path_text}")
    if path.is_dir():
        raise UsageError(f"{path_text} is a directory, not a {what}")
    try:
        if path.stat().st_size > MAX_INPUT_BYTES:
            raise UsageError(f"{path_text} is larger than {MAX_INPUT_BYTES // (1024 * 1024)} MiB")
        raw = path.read_bytes()
    except PermissionError:
        raise UsageError(f"cannot read {path_text}: permission denied") from None
    except OSError as exc:
        raise UsageError(f"cannot read {path_text}: {exc.strerror or exc}") from None
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise UsageError(f"{path_text} is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path_text} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None


def read_conversation(path_text: str) -> tuple[list[Message], list | None, dict]:
    """A JSON list of messages, or an OpenAI chat-completions request body."""
    data = read_json_file(path_text, "messages file")
    extra: dict = {}
    tools = None
    if isinstance(data, dict):
        if "messages" not in data:
            raise UsageError(f"{path_text}: an object must be a chat-completions body with 'messages'")
        tools = data.get("tools")
        if tools is not None and not isinstance(tools, list):
            raise UsageError(f"{path_text}: 'tools' must be a list")
        extra = {k: v for k, v in data.items() if k not in ("messages", "tools")}
        data = data["messages"]
    try:
        return messages_from_list(data), tools, extra
    except MessageError as exc:
        raise UsageError(f"{path_text}: {exc}") from None


def open_template(spec: str) -> ChatTemplate:
    try:
        return load_template(spec)
    except TemplateNotFound as exc:
        raise UsageError(str(exc)) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(f"cannot read template {spec}: {exc}") from None


def open_tokenizer(spec: str) -> Tokenizer:
    try:
        return get_tokenizer(spec)
    except TokenizerNotFound as exc:
        raise UsageError(str(exc)) from None


def parse_vars(pairs: list[str]) -> dict:
    """--var KEY=VALUE: VALUE is read as JSON when it parses (true, 3, "x"), else as a string."""
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--var expects KEY=VALUE, got {pair!r}")
        try:
            out[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            out[key.strip()] = value
    return out
