"""Session titles: an untitled session is named from its first user message; the user can rename it.

A title comes from the user's own text or the user's typing, but it is shown in the app's header, the
session browser and file listings: it is bounded and kept to one line here; screens show it with
visible() like anything stored in a session file.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tui.sessions.model import Session

from tui.controller.events import SessionChanged, Severity

if TYPE_CHECKING:
    from tui.controller.parts import Parts

UNTITLED = ("", "New session")
TITLE_FROM_MESSAGE = 60  # characters of the first user message
TITLE_LIMIT = 200


def clean_title(text: str, limit: int = TITLE_LIMIT) -> str:
    """The first non-blank line, its runs of spaces folded, cut at `limit` characters."""
    line = next((part for part in text.splitlines() if part.strip()), "")
    line = " ".join(line.split())
    return line if len(line) <= limit else line[:limit - 1].rstrip() + "…"


def name_if_untitled(session: Session) -> bool:
    """Title an untitled session from its first user message; True if it was named."""
    if session.title.strip() not in UNTITLED:
        return False
    first = next((m.text() for m in session.messages  # the user's own words, not an attached document
                  if m.role == "user" and m.provenance.trusted and m.text().strip()), "")
    title = clean_title(first, TITLE_FROM_MESSAGE)
    if not title:
        return False
    session.title = title
    return True


def announce(parts: "Parts") -> None:
    parts.emit(session_changed(parts))


def session_changed(parts: "Parts", draft: str | None = None) -> SessionChanged:
    """The event saying which session is open, under what title, and whether (and why) this app only reads it;
    `draft`: the text the composer holds from now on (None: what it holds stays)."""
    file = parts.file
    return SessionChanged(parts.wb.session.title, file.read_only, file.session_file,
                          file.read_only_line() if file.read_only else "", draft=draft)


def rename(parts: "Parts", text: str) -> bool:
    """The user's new title (from the palette); an empty one is refused."""
    title = clean_title(text)
    if not title:
        return False
    if parts.read_only:  # the file is another ctxpane's to write: its title too
        parts.notify(f"not renamed: {parts.file.read_only_line()}", severity=Severity.WARNING, timeout=15)
        return False
    parts.wb.session.title = title
    announce(parts)
    parts.file.autosave()
    return True
