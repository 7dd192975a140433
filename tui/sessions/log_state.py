"""What a session file of version 2 holds, as its reader folds it (tui/sessions/session_log.py): the state to build
the session from and to go on appending to; and a request's body as frame and parts, with what it shares with
the request before left out of its line (_shortened, when writing) and filled in again (_completed, when reading)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tui.sessions.body_split import Split, join, split
from tui.sessions.log_diff import BadChange, Unpacked, apply_list
from tui.sessions.model import SessionFormatError
from tui.sessions.safe_io import MAX_SESSION_BYTES

Json = Any


@dataclass
class LogState:
    """What a session file holds, as read: enough to build the session and to go on appending to it."""

    header: dict[str, Json]
    parts: dict[str, str] = field(default_factory=dict)  # H -> exact text
    messages: dict[str, dict[str, Json]] = field(default_factory=dict)  # H -> message record
    records: list[dict[str, Json]] = field(default_factory=list)  # each request's figures
    bodies: list[dict[str, Json]] = field(default_factory=list)  # each request's body, as frame and parts
    settings: dict[str, Json] = field(default_factory=dict)
    shown: list[str] = field(default_factory=list)  # the messages shown, by H
    branches: list[dict[str, Json]] = field(default_factory=list)
    id_floor: int = 0  # one past the highest numbered message id the requests name
    initial: dict[str, Json] = field(default_factory=dict)  # the last request's figures as its first line wrote them
    complete: int = 0  # bytes of whole lines (a last line cut short is not counted)
    cut: int = 0  # bytes of a last line cut short (NULs a power cut left included)
    nuls: int = 0  # of them, the NUL bytes at the very end
    unended: bool = False  # its last line is whole but lacks its newline (the next append writes it first)
    lengths: dict[str, tuple[int, int]] = field(default_factory=dict, repr=False)  # array -> (request, its length)
    _lists: dict[tuple[int, str], list[str]] = field(default_factory=dict, repr=False)  # resolved, the latest
    unpacked: Unpacked = field(default_factory=lambda: Unpacked(MAX_SESSION_BYTES), repr=False)

    def items(self, index: int, key: str) -> list[str]:
        """The parts of the array `key` of request `index`'s body, resolved through the requests before it."""
        chain: list[dict[str, Json]] = []
        at = index
        base: list[str] = []
        while at >= 0:
            memo = self._lists.get((at, key))
            if memo is not None:
                base = memo
                break
            hole = _list_hole(self.bodies[at], key)
            if hole is None:
                break
            chain.append(hole)
            if "f" not in hole:
                break
            at -= 1
        items = base
        for hole in reversed(chain):
            items = apply_list(items, hole)
        if chain:  # the latest resolved is kept: replay in order never walks back
            self._lists = {k: v for k, v in self._lists.items() if k[1] != key}
            self._lists[(index, key)] = items
        return items

    def message_text(self, ident: str) -> str:
        """The content of message H (a reply's content is written as the message it became)."""
        content = self.messages[ident].get("content") if ident in self.messages else None
        if not isinstance(content, str):
            raise BadChange("a reply names a message the file does not hold")
        return content

    def body_text(self, index: int) -> str:
        body = self.bodies[index]
        pieces: list[str | list[str]] = [self.parts[hole["x"]] if "x" in hole else self.items(index, hole["key"])
                                         for hole in body["h"]]
        _check_rebuilt_size(body, pieces, self.parts)
        texts = []
        for hole, piece in zip(body["h"], pieces):
            if isinstance(piece, str):
                texts.append(piece)
            else:
                lead, sep, trail = hole["l"]
                texts.append(lead + sep.join(self.parts[h] for h in piece) + trail)
        return join(body["k"], texts)

    def split_of(self, index: int) -> Split:
        """Request `index`'s body cut as the writer cut it (to cut the next one)."""
        return split(self.body_text(index))


def _check_rebuilt_size(body: dict[str, Json], pieces: list[str | list[str]], parts: dict[str, str]) -> None:
    """A body may name one part many times: what it rebuilds to is bounded as a file is (a version-1 body could be
    no larger), measured before it is built (a few MB of file naming one big part would be gigabytes)."""
    size = sum(map(len, body["k"]))
    for hole, piece in zip(body["h"], pieces):
        if isinstance(piece, str):
            size += len(piece)
        else:
            size += sum(map(len, hole["l"])) + len(hole["l"][1]) * len(piece) + sum(len(parts[h]) for h in piece)
        if size > MAX_SESSION_BYTES:
            raise SessionFormatError("a request body that rebuilds to more than a session file may hold")


def _completed(body: Json, before: dict[str, Json] | None) -> Json:
    """A body as its line wrote it, with what it shares with the request before filled in: its frame (`k`) and the
    layout (`l`) of its arrays, written only when they differ."""
    if not isinstance(body, dict) or before is None:
        return body
    out = dict(body)
    if "k" not in out:
        out["k"] = before.get("k")
    holes = out.get("h")
    if isinstance(holes, list) and any(isinstance(h, dict) and "x" not in h and "l" not in h for h in holes):
        layouts = {h.get("key"): h.get("l") for h in before.get("h", []) if isinstance(h, dict) and "l" in h}
        out["h"] = [{**h, "l": layouts.get(h.get("key"))} if isinstance(h, dict) and "x" not in h and "l" not in h
                    else h for h in holes]
    return out


def _shortened(body: dict[str, Json], before: dict[str, Json] | None) -> dict[str, Json]:
    """The body as its line writes it: without what it shares with the request before (see _completed)."""
    if before is None:
        return body
    out: dict[str, Json] = {}
    if body["k"] != before.get("k"):
        out["k"] = body["k"]
    layouts = {h.get("key"): h.get("l") for h in before.get("h", []) if "l" in h}
    out["h"] = [{k: v for k, v in h.items() if k != "l"} if "l" in h and layouts.get(h["key"]) == h["l"] else h
                for h in body["h"]]
    return out


def _list_hole(body: dict[str, Json], key: str) -> dict[str, Json] | None:
    for hole in body.get("h", []):
        if isinstance(hole, dict) and hole.get("key") == key and "l" in hole:
            return hole
    return None
