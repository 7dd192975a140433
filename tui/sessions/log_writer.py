"""Writing the session file of version 2 (tui/sessions/session_log.py reads it; docs/session-format.md): what
changed since the last append, as whole lines written at once, each part and message once. One append's lines
and what they add are a Batch (log_batch.py); a body's text as written comes from body_text.py.
"""

from __future__ import annotations

import os
from dataclasses import fields
from pathlib import Path
from typing import Any, Iterable


from tui.context.messages import Message
from tui.context.request_bytes import request_text
from tui.sessions.body_split import Hole, Split, split
from tui.context.untrusted.outside_files import MAX_DEPTH
from tui.sessions.bounds import bounded_fields, fits, merged_notes
from tui.sessions.body_text import canonical, exact_text, wire_key
from tui.sessions.log_batch import Batch
from tui.sessions.log_diff import copy_json, diff, list_change, shared_copy
from tui.sessions.log_state import Json, LogState, _shortened
from tui.sessions.model import FORMAT, RequestRecord, Session

from tui.sessions.session_log import (CHECKED, LOG_VERSION, MIN_NAMED, SETTINGS, WIRE_KEYS, _dumps, part_hash)

__all__ = ["LogWriter", "figures_of", "log_bytes"]


FIXED = ("message_ids",)  # a record's fields that never change once it is written (as long as the conversation)
# The levels of a line above what it holds: a record's or the settings' fields sit at {"t":…,"d":{"s":{key: value}}}
# (the fields' object is the third level), a message's at {"t":"m","v":{key: value}} (the second).
FIELDS_AT, MESSAGE_AT = 3, 2


def figures_of(record: RequestRecord, kept: dict[str, Json] | None = None) -> dict[str, Json]:
    """A record's fields but its body, as JSON values (a copy: the record may change on). With `kept`, the figures
    written before, the fields that never change are taken from them (no copy of the conversation's ids again)."""
    names = [f.name for f in fields(RequestRecord) if f.name != "body" and not (kept is not None and f.name in FIXED
                                                                                and f.name in kept)]
    figures: dict[str, Json] = shared_copy({name: getattr(record, name) for name in names})
    if kept is not None:
        for name in FIXED:
            if name in kept:
                figures[name] = kept[name]
    return figures


def bounded_figures(figures: dict[str, Json]) -> dict[str, Json]:
    """A record's figures as its line can hold them (tui/sessions/bounds.py): what is past the reader's bounds kept
    as text, said in the record's `bounded` (kept with the notes already there; absent when there are none)."""
    out, notes = bounded_fields(figures, MAX_DEPTH - FIELDS_AT + 1)
    notes = merged_notes(figures.get("bounded") or [], notes)
    if notes:
        out = {**out, "bounded": notes}
    else:
        out = {key: value for key, value in out.items() if key != "bounded"}
    return out


def fitting(line: dict[str, Json], old: dict[str, Json], new: dict[str, Json]) -> str:
    """The line, its change `d` (from `old` to `new`) as it is, or when that nests past the reader's bound, as the
    values it changes set whole: a change inside a change adds two levels a step (log_diff), a value set whole sits
    where the fields do, which the bounded values fit."""
    if "d" not in line or fits(line):
        return _dumps(line)
    flat: dict[str, Json] = {}
    sets = {key: value for key, value in new.items() if key not in old or old[key] != value}
    gone = [key for key in old if key not in new]
    if sets:
        flat["s"] = sets
    if gone:
        flat["x"] = gone
    return _dumps({**line, "d": flat})  # (the key keeps its place in the line)


class LogWriter:
    """Appends a session's changes to its file: what is new since the last append, nothing else.

    Used from one thread at a time (the app's writer thread, the tap's recording thread). `append` computes the
    lines, writes them in one go, flushes them to disk, and only then takes them as written: a failed write is
    cut off the file again and tried in full at the next append.
    """

    def __init__(self, path: Path, sync: bool = True) -> None:
        self.path, self.sync = path, sync
        self.known: set[str] = set()  # parts and messages in the file
        self.canonical: dict[str, str] = {}  # H of a wire message as request_text writes it -> the part holding it
        self.figures: dict[int, dict[str, Json]] = {}  # the figures last written of the requests still compared
        self.bodies: dict[int, Split] = {}  # the last request's body, cut
        self.items: dict[int, dict[str, list[str]]] = {}  # and its arrays, by H
        self.count = 0  # requests in the file
        self.settled = 0  # the requests before this are not compared again (but those watched)
        self.watch: dict[int, tuple[Any, ...]] = {}  # older requests whose reply was incomplete: what they held
        self.settings: dict[str, Json] = {}
        self.shown: list[str] = []
        self.branches: list[dict[str, Json]] = []
        self.size = 0
        self.unended = False  # the file's last line lacks its newline (read_log): the next append writes it first
        self.identity: tuple[int, int] | None = None  # the file appended to (device, inode): one replaced is refused
        self.started = False
        self.own_wire = True  # the bodies' messages are written as request_text writes them (the app's own)
        self._hashes: dict[int, tuple[Message, str, Any]] = {}  # id(message) -> (it, H, the values it held)
        self.session_id = ""  # the session this writer appends (SessionAppender)
        self._shown_messages: list[Message] = []  # the messages `shown` names, as last written
        self.last_body: dict[str, Json] | None = None  # the last request's body (the app's: its text follows from it)
        self.initial: dict[str, Json] = {}  # the last request's figures as its first line wrote them
        self.encoding: dict[str, Json] | None = None  # the last request's body as frame and parts (completed)
        self.contents: dict[str, str] = {}  # the latest messages' contents (long ones) -> their H
        self.noted: list[str] = []  # the notes of messages' values kept as text (bounds.py), for the settings

    # -- the file as it is ---------------------------------------------------------------------------------------
    def resume(self, state: LogState) -> None:
        """Go on from what a file holds (read with read_log): nothing in it is written again."""
        self.known = set(state.parts) | set(state.messages)
        self.count = len(state.records)
        self.settled = max(0, self.count - CHECKED)
        self.figures = {i: copy_json(state.records[i]) for i in range(self.settled, self.count)}
        if state.records:
            last = self.count - 1
            self.bodies = {last: state.split_of(last)}
            self.items = {last: {h["key"]: list(state.items(last, h["key"])) for h in state.bodies[last]["h"]
                                 if "l" in h}}
        for ident, text in state.parts.items():
            self.canonical.setdefault(part_hash(canonical(text)[0]), ident)
        self.initial = copy_json(state.initial)
        self.encoding = copy_json(state.bodies[-1]) if state.bodies else None
        self.settings = copy_json(state.settings)
        self.shown = list(state.shown)
        self.branches = copy_json(state.branches)
        self.size = state.complete
        self.unended = state.unended  # the last line lacks its newline: the next append writes it first
        self.started = True

    # -- appending -----------------------------------------------------------------------------------------------
    def append(self, session: Session, secrets: Iterable[str] = ()) -> int:
        """Write what changed in `session` since the last append; returns the bytes written (0: nothing new)."""
        data, batch = self.prepare(session, secrets)
        if not data:
            return 0
        self._write(data)
        self.taken(batch, session)
        return len(data)

    def prepare(self, session: Session, secrets: Iterable[str] = ()) -> tuple[bytes, Batch]:
        """The lines an append would write, and what they add (taken with `taken` once they are written)."""
        from tui.context.untrusted.redaction import Redactor

        secrets = list(secrets)
        redactor = Redactor(secrets)
        batch = Batch(self)
        if not self.started:
            batch.add(_dumps({"format": FORMAT, "version": LOG_VERSION, "layout": "lines", "id": session.id,
                              "created": session.created}))
        # The requests' new parts first (the session's messages are written as the parts that hold them), then the
        # session (a request's reply names the message it became), then the requests' lines.
        for index, held in list(self.watch.items()):
            if index < len(session.requests) and _holding(session.requests[index]) != held:
                self._record(batch, session.requests[index], index, redactor)
        for index in range(self.settled, len(session.requests)):
            self._record(batch, session.requests[index], index, redactor)
        self._state(batch, session, secrets)
        for later in batch.later:
            later()
        if not batch.lines:
            return b"", batch
        return ("\n".join(batch.lines) + "\n").encode("utf-8", "surrogatepass"), batch

    def taken(self, batch: Batch, session: Session) -> None:
        batch.commit()
        self.started = True
        self._settle(session)

    def _write(self, data: bytes) -> None:
        if not self.started:  # a new file, or one of version 1 converted: whole, atomically
            from tui.sessions.safe_io import write_atomic

            write_atomic(self.path, data) if self.sync else _write_new(self.path, data)
            self.size = len(data)
            new = os.lstat(self.path)
            self.identity = (new.st_dev, new.st_ino)
            return
        # (O_NONBLOCK: a FIFO put at the path is refused, not waited on for ever by the writer thread)
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
        try:
            info = os.fstat(fd)
            changed = self._changed(fd, info)
            if changed:
                from tui.sessions.safe_io import SessionFileError

                raise SessionFileError(f"{self.path.name} {changed} since ctxpane last wrote to it: nothing was "
                                       "appended (what it holds is kept; the next save reads it again first)")
            if info.st_size != self.size:
                os.ftruncate(fd, self.size)  # a line cut short by a kill, or a write that failed: gone first
            if self.unended:
                data = b"\n" + data
            view = memoryview(data)
            written = 0
            try:
                while written < len(data):
                    written += os.write(fd, view[written:])
                if self.sync:
                    os.fsync(fd)
            except BaseException:
                try:
                    os.ftruncate(fd, self.size)
                except OSError:
                    pass
                raise
            self.identity = (info.st_dev, info.st_ino)
        finally:
            os.close(fd)
        self.size += len(data)
        self.unended = False

    def _changed(self, fd: int, info: os.stat_result) -> str:
        """What another program did to the file since the last append ("" when nothing): another writer's lines
        must never be cut off, nor this writer's lines go after a file it has not read (its parts would be missing).
        Bytes past the end without a line break are a line cut short (a kill): those are cut off."""
        import stat

        if not stat.S_ISREG(info.st_mode):
            return "is no longer a regular file"
        if self.identity is not None and (info.st_dev, info.st_ino) != self.identity:
            return "was replaced by another file"
        if info.st_size < self.size:
            return f"was cut shorter by another program ({info.st_size:,} bytes, not {self.size:,})"
        at = self.size
        while at < info.st_size:
            chunk = os.pread(fd, min(1 << 20, info.st_size - at), at)
            if not chunk:
                break
            if b"\n" in chunk:
                return "was appended to by another program"
            at += len(chunk)
        return ""

    def _settle(self, session: Session) -> None:
        """Requests before the last CHECKED are settled: never compared again, but those whose reply was incomplete
        (a reply cut short, or one still streaming while later requests went: the tap), compared only when one of
        the values they hold was replaced (a reply is replaced as it streams, never changed in place)."""
        for index in list(self.watch):
            record = session.requests[index] if index < len(session.requests) else None
            if record is None or not record.incomplete:
                del self.watch[index]
                self.figures.pop(index, None)
            else:
                self.watch[index] = _holding(record)
        while self.settled < min(self.count, len(session.requests)) - CHECKED:
            record = session.requests[self.settled]
            if record.incomplete:
                self.watch[self.settled] = _holding(record)
            else:
                self.figures.pop(self.settled, None)
            self.settled += 1

    def _record(self, batch: Batch, record: RequestRecord, index: int, redactor: Any) -> None:
        from tui.sessions.redacted import redacted_request

        if index < self.count:
            written = batch.figures.get(index) or self.figures.get(index)
            if written is None:
                return
            figures = bounded_figures(redacted_request(figures_of(record, kept=written), redactor))

            def changed() -> None:
                like = (batch.figures.get(index - 1) or self.figures.get(index - 1)) if index else None
                change = self._content_named(diff(written, figures, like), batch)
                if change:
                    batch.add(fitting({"t": "r", "n": index + 1, "d": change}, written, figures))
                    batch.figures[index] = figures
            batch.later.append(changed)
            return
        if index != self.count + batch.new_records:
            return  # (requests are only ever added at the end)
        figures = bounded_figures(redacted_request(figures_of(record), redactor))
        before = self.bodies.get(index - 1) if index == self.count else batch.bodies.get(index - 1)
        text = exact_text(record, redactor, self.last_body if index == self.count else batch.last_body, before)
        if index == self.count + batch.new_records:
            batch.last_body = record.body
        arrays_before = self.items.get(index - 1) if index == self.count else batch.items.get(index - 1)
        cut = split(text, before)
        holes = []
        arrays: dict[str, list[str]] = {}
        for hole in cut.holes:
            holes.append(self._hole(batch, hole, index, arrays_before, arrays))
        encoding = {"k": list(cut.pieces), "h": holes}
        shortened = _shortened(encoding, self.encoding if index == self.count else batch.encoding)
        batch.encoding = encoding

        def added() -> None:
            base = (batch.initial if batch.initial is not None else self.initial) if index else {}
            like = (batch.figures.get(index - 1) or self.figures.get(index - 1)) if index else None
            change = self._content_named(diff(base, figures, like), batch)
            batch.add(fitting({"t": "r", "n": index + 1, "d": change, "b": shortened}, base, figures))
            batch.figures[index] = figures
            batch.initial = figures
        batch.later.append(added)
        batch.bodies[index] = cut
        batch.items[index] = arrays
        batch.new_records += 1

    def _content_named(self, change: dict[str, Json], batch: Batch) -> dict[str, Json]:
        """A reply's content set whole, when the message it became holds it: written as that message's H."""
        reply = change.get("d", {}).get("reply")
        sets = reply.get("s") if isinstance(reply, dict) else None
        content = sets.get("content") if isinstance(sets, dict) else None
        if isinstance(content, str) and len(content) >= MIN_NAMED:
            ident = batch.contents.get(content) or self.contents.get(content)
            if ident is not None and reply is not None and sets is not None:
                del sets["content"]
                if not sets:
                    del reply["s"]
                reply.setdefault("r", {})["content"] = ident
        return change

    def _hole(self, batch: Batch, hole: Hole, index: int, arrays_before: dict[str, list[str]] | None,
              arrays: dict[str, list[str]]) -> dict[str, Json]:
        if hole.items is None:
            return {"key": hole.key, "x": batch.part(hole.text)}
        earlier = (arrays_before or {}).get(hole.key)
        known = hole.reused if earlier is not None and hole.reused <= len(earlier) else 0
        # The items the previous body shared are its items: their parts are known (no hash again: the work of an
        # append grows with what is new, not with the conversation).
        idents = (earlier[:known] if earlier is not None else []) + \
            [batch.part(text, wire=True) for text in hole.items[known:]]
        arrays[hole.key] = idents
        out: dict[str, Json] = {"key": hole.key, "l": [hole.lead, hole.sep, hole.trail]}
        if earlier is not None:
            out.update({"f": index, **list_change(earlier, idents)})
        else:
            out.update({"k": 0, "a": idents})
        return out

    def _state(self, batch: Batch, session: Session, secrets: list[str]) -> None:
        from tui.sessions.redacted import redacted_session

        settings = redacted_session({**session.to_settings(), "requests": []}, secrets)
        settings = {key: settings[key] for key in SETTINGS if key in settings}
        settings, notes = bounded_fields(settings, MAX_DEPTH - FIELDS_AT + 1)
        hashes: dict[int, tuple[Message, str, Any]] = {}
        messages = session.messages
        known = len(self._shown_messages)
        if known and len(messages) >= known and messages[:known] == self._shown_messages:
            # The messages shown before are there still (the same, or equal: the tap makes them anew each
            # request): only those added are looked at. A list compare, no Python loop over the conversation.
            hashes = self._hashes  # (a cache: what is added stays, the messages gone are let go below)
            shown = self.shown[:known] + [self._message(batch, m, hashes) for m in messages[known:]]
        else:
            shown = [self._message(batch, m, hashes) for m in messages]
        branches = [{"fork": b.fork, "label": b.label, "created": b.created,
                     "m": [self._message(batch, m, hashes) for m in b.messages]} for b in session.branches]
        self._hashes = hashes
        notes = merged_notes(settings.get("bounded") or [], self.noted, notes)  # (the messages': said once, kept)
        settings = {key: value for key, value in settings.items() if key != "bounded"}
        if notes:
            settings["bounded"] = notes
        line: dict[str, Json] = {"t": "st"}
        change = diff(self.settings, settings)
        if change:
            line["d"] = change
        if shown != self.shown:
            line["m"] = list_change(self.shown, shown)
        if branches != self.branches:  # (as a change from the branches before: their lines grow by the new ones)
            kept = list_change(self.branches, branches)
            line["br"] = kept if kept["k"] else branches
        batch.shown_messages = list(messages)
        if len(line) > 1:
            batch.add(fitting(line, self.settings, settings))
            batch.state = (settings, shown, branches)

    def _message(self, batch: Batch, message: Message, hashes: dict[int, tuple[Message, str, Any]]) -> str:
        """The message's H, its line added to the batch when the file does not hold it yet."""
        cached = self._hashes.get(id(message))
        held = _message_holding(message)
        if cached is None or cached[0] is not message or cached[2] != held or \
                cached[1] not in self.known and cached[1] not in batch.known:  # (cached by an append that failed)
            record, notes = bounded_fields(message.to_record(), MAX_DEPTH - MESSAGE_AT + 1)
            if notes:  # said in the session's notes (a message has no field for them)
                self.noted = merged_notes(self.noted, [f"message {message.id[:40]}: {note}" for note in notes])
            text = _dumps(record)
            ident = part_hash(text)
            cached = (message, ident, held)
            if ident not in self.known and ident not in batch.known:
                if record.get("provenance") == _default_provenance(message.role):
                    record = {k: v for k, v in record.items() if k != "provenance"}  # read back as the default
                wire = {k: record[k] for k in WIRE_KEYS if k in record}
                own = {k: v for k, v in record.items() if k not in WIRE_KEYS}
                key = part_hash(wire_key(wire))
                part = self.canonical.get(key) or batch.canonical.get(key)
                if part is None and self.own_wire and isinstance(wire.get("content"), (str, type(None))):
                    part = batch.part(request_text(wire), wire=True)  # the next request sends these very bytes
                if part is not None:
                    batch.add(_dumps({"t": "m", "h": ident, "w": part, "v": own}))
                else:
                    batch.add(_dumps({"t": "m", "h": ident, "v": record}))
                batch.known.add(ident)
                if message.role == "assistant" and isinstance(message.content, str) \
                        and len(message.content) >= MIN_NAMED:
                    batch.contents[message.content] = ident
        hashes[id(message)] = cached
        return cached[1]


def _write_new(path: Path, data: bytes) -> None:
    """A new file without waiting for the disk (a caller that gave up fsync for speed): temporary file, rename."""
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        view = memoryview(data)
        written = 0
        while written < len(data):
            written += os.write(fd, view[written:])
    finally:
        os.close(fd)
    os.replace(temp, path)


def _default_provenance(role: str) -> dict[str, Json]:
    """The provenance a message of `role` is read with when its record names none (parse.to_message)."""
    from tui.context.messages import UNTRUSTED_SOURCES, default_source

    source = default_source(role)
    return {"source": source, "trusted": source not in UNTRUSTED_SOURCES, "label": ""}


def _message_holding(message: Message) -> tuple[Any, ...]:
    """What a message holds (a message is replaced when it changes, but one changed in place is seen too)."""
    return (message.role, message.content, message.name, message.tool_calls, message.tool_call_id,
            message.reasoning_content, message.provenance, message.pinned, message.id, message.incomplete)


def _holding(record: RequestRecord) -> tuple[Any, ...]:
    """The values a record holds that a reply replaces (compared by identity: a snapshot shares them)."""
    return (record.reply, record.usage, record.timings, record.received, record.cost, record.fit, record.reply_id,
            record.cache_class, record.cache_place)


def log_bytes(session: Session, secrets: Iterable[str] = ()) -> bytes:
    """A whole session as a version-2 file's bytes (writing a new file: import, convert, a copy)."""
    return LogWriter(Path("session")).prepare(session, secrets)[0]
