"""Opening a session file for the headless commands: one clear line and status 2 when it cannot be."""

from __future__ import annotations

from pathlib import Path

from tui.app.workbench import template_from_session
from tui.context.template_library import TemplateNotFound
from tui.context.tokens import TokenizerNotFound, get_tokenizer
from tui.errors import UsageError
from tui.sessions.model import Session
from tui.sessions.replay import offline_tokenizer_name
from tui.sessions.store import Opened, SessionFileError, load_session


def open_session(path_text: str) -> Opened:
    try:
        return load_session(Path(path_text).expanduser())
    except SessionFileError as exc:
        raise UsageError(str(exc)) from None


def session_engine(session: Session, template: str | None = None, tokenizer: str | None = None):
    from tui.commands.inputs import open_template
    try:
        chosen = open_template(template) if template else template_from_session(session.template)
    except TemplateNotFound as exc:
        raise UsageError(str(exc)) from None
    name = tokenizer or offline_tokenizer_name(session.tokenizer, chosen.name)
    try:
        return chosen, get_tokenizer(name)
    except TokenizerNotFound as exc:
        raise UsageError(str(exc)) from None
