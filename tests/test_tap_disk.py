"""The tap's files reach the disk once, as it ends (issue 26: waiting for the disk on each write was most of the
recording's time under busy traffic, and the recording fell behind). What it wrote is in the files at once, for a
killed tap as for a reader, and the tap waits for the disk before it says it is done."""

from __future__ import annotations

import os

import httpx

from session_files import session_data
from tap_helpers import RunningTap, upstream  # noqa: F401 - a fixture


def test_conversations_are_written_without_an_fsync_each_and_synced_once_at_the_end(upstream, tmp_path, monkeypatch):
    fsyncs, syncs = [], []
    real_fsync, real_sync = os.fsync, os.sync
    monkeypatch.setattr(os, "fsync", lambda fd: (fsyncs.append(fd), real_fsync(fd))[1])
    monkeypatch.setattr(os, "sync", lambda: (syncs.append(1), real_sync())[1])
    tap = RunningTap(upstream.url, tmp_path / "tapped")
    try:
        for number in range(5):
            body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": f"question {number}"}]}
            assert httpx.post(f"{tap.url}/ok/v1/chat/completions", json=body, timeout=30).status_code == 200
        tap.settle()
        files = sorted((tmp_path / "tapped").glob("*.ctxpane.json"))
        assert len(files) == 5  # written as the traffic went, readable before the tap ends
        assert all(session_data(path)["messages"][0]["content"].startswith("question ") for path in files)
        assert fsyncs == [] and syncs == []
    finally:
        tap.stop()
    assert syncs == [1]  # the end waits for the disk, once for all files
