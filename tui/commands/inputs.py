"""Reading what the user gives on the command line, with one clear error line for anything wrong."""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tui.errors import UsageError
from tui.sessions.model import Session, SessionFormatError
from tui.sessions.safe_io import SessionFileError, about, read_regular_file
from tui.sessions.store import Opened, load_session
from tui.context.messages import Message
from tui.context.templates.library import ChatTemplate, TemplateNotFound, load_template
from tui.context.tokens.counting import Tokenizer, TokenizerNotFound, get_tokenizer

MAX_INPUT_BYTES = 64 * 1024 * 1024


def read_json_file(path_text: str, what: str = "file") -> Any:
    """A JSON value from a file the user named, with the bounds of a session file; one line if not."""
    from tui.sessions.parse import json_value

    path = Path(path_text).expanduser()
    try:
        raw = read_regular_file(path, MAX_INPUT_BYTES)
    except SessionFileError as exc:
        raise UsageError(str(exc).replace("no such file", f"{what} not found", 1)) from None
    try:
        return json_value(raw)
    except SessionFormatError as exc:
        raise UsageError(about(path_text, str(exc))) from None


@dataclass
class Conversation:
    """What `render FILE` was given: messages and tools, and the session when FILE is a session file."""

    messages: list[Message]
    tools: list | None = None
    session: Session | None = None
    model: str = ""  # the body's or the session's model, for prices
    format: str = "chat"  # the body's wire format (tui/context/formats): how the server reads it
    notes: list[str] = field(default_factory=list)  # what the format says beside the messages
    parsed: Any = None  # the body as its format reads it (tui.context.formats.Parsed), when it was a body


def read_conversation(path_text: str, wire: str | None = None) -> Conversation:
    """A JSON list of messages, a request body (chat completions, Anthropic Messages or OpenAI Responses: told by
    its fields, or by `wire`), or a session file, checked like a session's."""
    from tui.sessions.model import FORMAT
    from tui.sessions.parse import messages_from_data, tools_from_data

    if session_lines(path_text):  # a session file of version 2 (JSON lines)
        return session_conversation(path_text)
    data = read_json_file(path_text, "messages file")
    try:
        if isinstance(data, dict) and data.get("format") == FORMAT:
            return session_conversation(path_text)
        kind = wire_kind(data, wire, path_text)
        if kind is not None and kind.value != "chat":
            return wire_conversation(path_text, data, kind)
        if isinstance(data, dict):
            if "messages" not in data:
                raise UsageError(f"{path_text}: an object must be a chat-completions body with 'messages'")
            model = data.get("model") if isinstance(data.get("model"), str) else ""
            return Conversation(messages_from_data(data["messages"]), tools_from_data(data.get("tools")), None,
                                model[:1000])
        return Conversation(messages_from_data(data, ""))
    except SessionFormatError as exc:
        raise UsageError(f"{path_text}: {exc}") from None


def session_lines(path_text: str) -> bool:
    """Whether the file named starts as a session file of version 2 does (its first line; nothing else is read)."""
    from tui.sessions.session_log import is_log

    try:
        with open(Path(path_text).expanduser(), "rb", opener=_nonblocking) as file:
            return stat.S_ISREG(os.fstat(file.fileno()).st_mode) and is_log(file.read(4096))
    except OSError:
        return False  # read again (and said) by the reader


def _nonblocking(path: str, flags: int) -> int:
    return os.open(path, flags | os.O_NONBLOCK)


def wire_kind(data: Any, wire: str | None, path_text: str):
    """The body's format: the one named (--format), else told by its fields; None for a list of messages."""
    from tui.context.formats import FormatKind, kind_of_body

    if wire:
        if not isinstance(data, dict):
            raise UsageError(f"{path_text}: --format {wire} needs a request body (a JSON object)")
        return FormatKind(wire)
    return kind_of_body(data)


def wire_conversation(path_text: str, body: dict, kind) -> Conversation:
    """A Messages or Responses body, as the messages and tools the server renders from it."""
    from tui.context.formats import FormatError, parse_body
    from tui.sessions.parse import messages_from_data, tools_from_data

    try:
        parsed = parse_body(kind, body)
    except FormatError as exc:
        raise UsageError(f"{path_text}: {exc}") from None
    notes = list(parsed.notes)
    if parsed.previous_response_id:
        notes.insert(0, f"previous_response_id {parsed.previous_response_id[:80]}: the server holds the context "
                        "before this input, which the file does not have: only this request's input is rendered")
    return Conversation(messages_from_data(parsed.messages), tools_from_data(parsed.tools), None, parsed.model,
                        kind.value, notes, parsed)


def session_conversation(path_text: str) -> Conversation:
    """A session file, opened like `replay` opens it (a newer version is read, never written)."""
    session = open_session(path_text).session
    return Conversation(session.messages, session.tools, session, session.model)


def open_session(path_text: str) -> Opened:
    """A session file the user named; one line (status 2) when it cannot be read or is not a session. What reading
    it left out or changed (a tail a power cut left, values kept as text) is said on stderr, as the app says it."""
    import sys

    from tui.errors import one_line

    try:
        opened = load_session(Path(path_text).expanduser())
    except SessionFileError as exc:
        raise UsageError(str(exc)) from None
    if opened.note:
        print(f"{path_text}: {one_line(opened.note, 1000)}", file=sys.stderr)
    return opened


def refuse_special_file(spec: str) -> None:
    """A --template or --tokenizer path that is a FIFO or device would block or never end: refuse it."""
    try:
        mode = os.stat(Path(spec).expanduser()).st_mode
    except (OSError, ValueError):
        return  # not a path (a built-in name), or one the loader reports itself
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise UsageError(f"{spec} is not a regular file (a FIFO, device or socket): not read")


def open_template(spec: str) -> ChatTemplate:
    refuse_special_file(spec)
    try:
        return load_template(spec)
    except TemplateNotFound as exc:
        raise UsageError(str(exc)) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(f"cannot read template {spec}: {exc}") from None


def open_tokenizer(spec: str) -> Tokenizer:
    refuse_special_file(spec)
    try:
        return get_tokenizer(spec)
    except TokenizerNotFound as exc:
        raise UsageError(str(exc)) from None


def parse_vars(pairs: list[str]) -> dict:
    """--var KEY=VALUE: VALUE is read as JSON when it parses (true, 3, "x"), else as a string."""
    from tui.sessions.parse import json_value
    from tui.sessions.schema import RESERVED_VARIABLES

    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UsageError(f"--var expects KEY=VALUE, got {pair!r}")
        if not is_utf8(value):  # bytes the locale could not decode: they would end up in the document
            raise UsageError(f"--var {key!r}: the value is not valid UTF-8")
        if not key.isidentifier() or key in RESERVED_VARIABLES:
            raise UsageError(f"--var {key!r}: a variable name must be an identifier other than "
                             f"{', '.join(sorted(RESERVED_VARIABLES))}")
        try:
            out[key] = json_value(value.encode("utf-8", "surrogateescape"))
        except SessionFormatError:
            out[key] = value
    return out


def is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
