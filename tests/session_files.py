"""A session file's content as the readable JSON of version 1 (`ctxpane export --format json`), whatever its version:
tests read what a file holds through the reader, as the app does (a version-2 file is JSON lines)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def session_data(path: Path | str) -> dict[str, Any]:
    from tui.sessions.store import load_session

    return load_session(Path(path)).session.to_dict()
