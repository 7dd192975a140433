"""The session a version-2 file holds, from the state its reader folded (tui/sessions/session_log.py): settings,
messages and each request's figures through the session schema, each body read from its parts, or from the file
again, only when it is asked for, and checked then."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Callable, TypeVar

from tui.sessions.log_state import Json, LogState
from tui.sessions.model import FORMAT, RequestRecord, Session, SessionFormatError
from tui.sessions.session_log import _decode, read_log

__all__ = ["body_text_in_file", "checked_body", "file_loaders", "session_from_log"]

T = TypeVar("T")


def session_from_log(state: LogState, path: Path | None = None) -> Session:
    """The session a file holds: settings and messages through the session schema, each request's figures through
    the request schema, its body left in the file until it is read."""
    from tui.sessions import schema
    from tui.sessions.parse import _request, convert, to_session

    header = state.header
    data: dict[str, Json] = {"format": FORMAT, "version": 1, "id": header.get("id"), **state.settings,
                             "messages": [state.messages[h] for h in state.shown],
                             "branches": [{**{k: v for k, v in b.items() if k != "m"},
                                           "messages": [state.messages[h] for h in b["m"]]} for b in state.branches]}
    if not data["branches"]:
        del data["branches"]
    session = to_session(convert(data, schema.SessionIn))
    requests = []
    for index, figures in enumerate(state.records):
        item = convert({**figures, "body": {}}, schema.RequestIn, f".requests[{index}]")
        plain = _request(item)
        values = {f.name: getattr(plain, f.name) for f in fields(RequestRecord) if f.name != "body"}
        requests.append(RequestRecord.lazy(_in_file(path, _body_loader(state, index)),
                                           _in_file(path, _text_loader(state, index)), **values))
    session.requests = requests
    session.next_id = max(session.next_id, state.id_floor)  # (to_session counted the messages' own ids)
    if state.cut:  # (the writer cuts them off before its next append: LogWriter._write)
        what = "NUL bytes (what a power cut leaves)" if state.nuls == state.cut else "bytes"
        session.read_notes.append(f"its last write was cut short (the app or the machine stopped): the "
                                  f"{state.cut:,} {what} after its last whole line were left out, and are cut off "
                                  "at the next save")
    bounded = kept_as_text(session)
    if bounded:
        session.read_notes.append(bounded)
    return session


def kept_as_text(session: Session) -> str:
    """One clause for the values the file keeps as text, past the reader's bounds (tui/sessions/bounds.py), or ""."""
    notes = [*session.bounded, *(f"request {r.number}: {note}" for r in session.requests for note in r.bounded)]
    if not notes:
        return ""
    many = len(notes) > 1
    return (f"{len(notes):,} value{'s' if many else ''} past the file's bounds {'are' if many else 'is'} kept as "
            f"text ({notes[0]}{'; …' if many else ''})")


def body_text_in_file(path: Path, index: int) -> str:
    """Request `index`'s exact body text, read again from its file (a record let go from memory: the tap)."""
    from tui.sessions.safe_io import MAX_SESSION_BYTES, SessionFileError, read_regular_file

    try:
        return read_log(read_regular_file(path, MAX_SESSION_BYTES)).body_text(index)
    except (SessionFileError, SessionFormatError, IndexError, KeyError) as exc:
        raise SessionFormatError(f"{path.name}: request {index + 1} cannot be read again: {exc}") from None


def file_loaders(path: Path, index: int, kind: str = "chat") -> tuple[Callable[[], dict[str, Json]],
                                                                     Callable[[], str]]:
    """The loaders of a record let go from memory: its body (of wire format `kind`) and its exact text, from the
    file."""
    return (lambda: checked_body(body_text_in_file(path, index), index, kind)), \
        lambda: body_text_in_file(path, index)


def checked_body(text: str, index: int, kind: str = "chat") -> dict[str, Json]:
    """A request's body rebuilt, through the checks a body of its wire format `kind` has (tui/sessions/schema.py):
    the bounds of every record, applied when the record's body is read (opening the file reads none)."""
    from tui.errors import schema_error_line
    from tui.sessions.schema import Body, check_tools, check_wire_body
    from tui.sessions.schema_types import conform

    body = _decode(text.encode("utf-8", "surrogatepass"), index + 1, "the body of request")
    if not isinstance(body, dict):
        raise SessionFormatError(f"the body of request {index + 1} is not an object")
    try:
        if kind == "chat":
            conform(body, Body, f".requests[{index}].body")
            check_tools(body.get("tools"), f".requests[{index}].body.tools")
        else:
            check_wire_body(kind, body, f".requests[{index}].body")
    except ValueError as exc:
        raise SessionFormatError(schema_error_line(str(exc))) from None
    return body


def _in_file(path: Path | None, load: Callable[[], T]) -> Callable[[], T]:
    """A loader whose error names the file: a body read long after the file was opened (replay, export) may be the
    one a damaged file cannot rebuild, and that is said as any problem with the file is, in one line naming it."""
    if path is None:
        return load

    def loaded() -> T:
        from tui.sessions.safe_io import about

        try:
            return load()
        except SessionFormatError as exc:
            raise SessionFormatError(about(path, str(exc))) from None
    return loaded


def _body_loader(state: LogState, index: int) -> Callable[[], dict[str, Json]]:
    kind = str(state.records[index].get("format") or "chat")
    return lambda: checked_body(state.body_text(index), index, kind)


def _text_loader(state: LogState, index: int) -> Callable[[], str]:
    return lambda: state.body_text(index)
