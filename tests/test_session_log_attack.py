"""Hostile version-2 session files: a few bytes that the reader would turn into gigabytes are refused in one line."""

from __future__ import annotations

import base64
import json
import zlib
from pathlib import Path

import pytest

from test_session_log import CLIENTS, FORMATS, grow
from tui.sessions.model import Session
from tui.sessions.store import SessionAppender, SessionFileError, load_session

MIB = 1024 * 1024


def small_session(path: Path, steps: int = 2) -> bytes:
    session = Session()
    grow(session, SessionAppender(sync=False), path, FORMATS["chat completions"], steps, CLIENTS["compact"])
    return path.read_bytes()


@pytest.mark.bulk
def test_compressed_texts_that_unpack_past_what_a_file_may_hold_are_refused(tmp_path):
    # 60 MiB of one letter packs into ~80 kB: five of them in one line of a 0.4 MB file would be 300 MiB in memory.
    path = tmp_path / "s.ctxpane.json"
    raw = small_session(path)
    packed = base64.b64encode(zlib.compress(b"a" * (60 * MIB), 9)).decode("ascii")
    line = {"t": "r", "n": 2, "d": {"d": {"reply": {"z": {f"k{i}": packed for i in range(5)}}}}}
    path.write_bytes(raw + json.dumps(line, separators=(",", ":")).encode() + b"\n")
    assert path.stat().st_size < MIB
    with pytest.raises(SessionFileError, match="unpack"):
        load_session(path)


def test_a_body_naming_one_part_past_what_a_file_may_hold_is_refused_when_read(tmp_path):
    # One 4 MB message named 70 times by a request's array: a 4 MB file whose body would rebuild to 280 MiB.
    from tui.sessions.model import SessionFormatError
    from tui.sessions.session_log import part_hash

    path = tmp_path / "s.ctxpane.json"
    raw = small_session(path)
    big = json.dumps({"role": "user", "content": "q" * (4 * MIB)}, separators=(",", ":"))
    ident = part_hash(big)
    body = {"k": ['{"model":"m","messages":', "}"], "h": [{"key": "messages", "l": ["[", ",", "]"], "a": [ident] * 70}]}
    lines = [{"t": "r", "n": 3, "d": {"s": {"number": 3}}, "b": body}]
    path.write_bytes(raw + f'{{"t":"x","h":"{ident}","v":{big}}}\n'.encode()
                     + b"".join(json.dumps(line, separators=(",", ":")).encode() + b"\n" for line in lines))
    assert path.stat().st_size < 5 * MIB
    record = load_session(path).session.requests[-1]
    with pytest.raises(SessionFormatError, match="more than a session file may hold"):
        _ = record.body


@pytest.mark.bulk
def test_a_bomb_after_texts_that_use_the_whole_bound_exactly_is_refused():
    """zlib reads a max_length of 0 as no limit: once the file's texts had used its bound to the byte, the next
    compressed text unpacked without any (300 MiB from a 0.4 MB text)."""
    from tui.sessions.log_diff import BadChange, Unpacked, _unsqueeze
    small = base64.b64encode(zlib.compress(b"a" * 1000)).decode()
    bomb = base64.b64encode(zlib.compress(b"\0" * (300 * MIB))).decode()
    budget = Unpacked(1000)
    assert len(_unsqueeze(small, budget=budget)) == 1000 and budget.left == 0
    with pytest.raises(BadChange, match="more than a session file may hold"):
        _unsqueeze(bomb, budget=budget)
