"""The sample session opened when there is nothing else to show (offline, first start)."""

from __future__ import annotations

import json

from tui.shipped import shipped_folder
from tui.context.messages import Message, Provenance
from tui.sessions.model import Session, SessionFormatError
from tui.sessions.parse import session_from_dict

OFFLINE_SAMPLE = "forged-tool-result.ctxpane.json"


def sample_names() -> list[str]:
    folder = shipped_folder("tui.sample_sessions", "sample_sessions")
    return sorted(entry.name for entry in folder.iterdir() if entry.name.endswith(".ctxpane.json"))


def load_sample(name: str) -> Session:
    text = shipped_folder("tui.sample_sessions", "sample_sessions").joinpath(name).read_text(encoding="utf-8")
    return session_from_dict(json.loads(text))


def sample_session() -> Session:
    try:
        session = load_sample(OFFLINE_SAMPLE)
    except (FileNotFoundError, SessionFormatError, ValueError):
        session = Session(title="Sample", messages=[
            Message("system", "You are a helpful assistant.", provenance=Provenance("system_prompt", True), id="sys"),
            Message("user", "Hello!", id="m1")])
    session.title = f"{session.title} (sample: offline)"
    session.base_url = ""  # a placeholder shown offline must not dial anywhere
    return session
