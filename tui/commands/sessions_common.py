"""A session file in the headless commands: the template and tokenizer to render it, a failing template as one line.

The file itself is opened by inputs.open_session, like any other file the user names (status 2 if it cannot be).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from tui.commands.inputs import open_template, open_tokenizer
from tui.context.errors import TemplateRenderError
from tui.context.templates.library import TemplateNotFound
from tui.context.tokens.counting import TokenizerNotFound, get_tokenizer
from tui.errors import UsageError
from tui.sessions.model import Session
from tui.sessions.replay import offline_tokenizer_name
from tui.sessions.session_template import template_from_session


def session_engine(session: Session, template: str | None = None, tokenizer: str | None = None):
    """The template and tokenizer to render a session with: the user's choice, else what the session stores."""
    try:
        chosen = open_template(template) if template else template_from_session(session.template)
    except TemplateNotFound as exc:
        raise UsageError(str(exc)) from None
    if tokenizer:
        return chosen, open_tokenizer(tokenizer)
    try:
        return chosen, get_tokenizer(offline_tokenizer_name(session.tokenizer, chosen))
    except TokenizerNotFound as exc:
        raise UsageError(str(exc)) from None


@contextmanager
def template_failures(where: str, template_name: str) -> Iterator[None]:
    """A template that refuses, breaks (syntax, sandbox) or exhausts memory or stack: one line, status 2."""
    try:
        yield
    except TemplateRenderError as exc:
        raise UsageError(f"{where}: template {template_name} failed: {exc}") from None
    except MemoryError:
        raise UsageError(f"{where}: template {template_name} ran out of memory") from None
    except RecursionError:
        raise UsageError(f"{where}: template {template_name} recursed too deeply") from None
