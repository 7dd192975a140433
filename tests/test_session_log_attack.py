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
