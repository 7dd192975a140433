"""Which session is open: at start-up, from the browser, a new one, a replayed step sent again; and export.

Transitions of the Controller, kept here: session files are read and written off the event loop.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from dataclasses import dataclass
from typing import Callable

from tui.context.untrusted.visible import visible
from tui.sessions.model import Session, recover_interrupted_reply
from tui.sessions.store import Opened, SessionFileError, load_session

from tui.controller.samples import sample_session
from tui.controller.events import Severity, Tone
from tui.controller.parts import Parts


def read_and_recover(path: Path) -> tuple[Opened, bool]:
    """In a worker: the session read and checked, and a reply a kill cut short restored (it is no one's yet)."""
    opened = load_session(path)
    return opened, recover_interrupted_reply(opened.session)


def forked(session: Session) -> Session:
    """A new session (its own id, so its own file) holding everything `session` holds: messages, requests, branches.
    The copy shares the messages and records, which are replaced, never changed in place (saver.snapshot); the
    session it was made from is no longer worked on."""
    from tui.sessions.model import now_iso
    from tui.sessions.transfer import new_title

    from tui.controller.saver import snapshot
    copy = snapshot(session)
    copy.id, copy.created, copy.updated = Session().id, now_iso(), now_iso()
    copy.title = new_title(session, "continued")
    copy.read_notes = []
    return copy


@dataclass(frozen=True)
class OpenHooks:
    """What opening does beyond the parts, each a function of another transition."""

    adopt: Callable[..., None]  # (session, path, read_only=False, draft=None): work on this session from now on
    fresh_session: Callable[[], Session]  # a new session with config.toml's policy and params
    keep_server_template: Callable[[bool | None, str], None]  # a new session keeps the server's
    answering: Callable[[], bool]  # a reply is on its way: the session shown may not change
    connect: Callable[[], None]
    start_send: Callable[[], None]  # send the session as it stands


class Opening:
    def __init__(self, parts: Parts, hooks: OpenHooks) -> None:
        self.parts, self.hooks = parts, hooks

    async def open_first(self, path: Path | None, offline: bool) -> None:
        """At start-up: the file named, else the sample (offline) or an empty session. Read off the loop;
        what was typed meanwhile stays the draft."""
        parts, hooks = self.parts, self.hooks
        if path is not None:
            parts.status(f"opening {path.name}…")
            try:
                opened = await asyncio.to_thread(read_and_recover, path)
            except SessionFileError as exc:
                parts.notify(visible(str(exc)), title="cannot open session", severity=Severity.ERROR, timeout=60)
                parts.status(visible(f"could not open {path.name}: a new session was started instead (the file is "
                                   "left as it is)"), Tone.BAD)
                hooks.adopt(hooks.fresh_session(), None, draft=parts.wb.session.draft)  # never another session (a sample)
                return
            else:
                self._opened_first(*opened, path)
                return
        if offline or not (parts.settings.base_url or parts.settings.scan_local):
            hooks.adopt(sample_session(), None, draft=parts.wb.session.draft)
            return
        hooks.adopt(hooks.fresh_session(), None, draft=parts.wb.session.draft)

    def _opened_first(self, opened: Opened, recovered: bool, path: Path) -> None:
        parts, hooks = self.parts, self.hooks
        if opened.note:
            parts.notify(visible(opened.note), severity=Severity.WARNING, timeout=10)
        hooks.adopt(opened.session, path, opened.read_only, draft=parts.wb.session.draft)
        parts.status("")
        if recovered:
            parts.notify("the last reply was cut short: what had arrived is restored, marked incomplete",
                       severity=Severity.WARNING, timeout=10)
            parts.file.autosave(now=True)

    def open_file(self, path: Path | None) -> None:
        parts, hooks = self.parts, self.hooks
        if path is not None and path != parts.file.session_file and not hooks.answering():
            parts.runtime.spawn(lambda: self._open_file(path), "open")

    async def _open_file(self, path: Path) -> None:
        parts, hooks = self.parts, self.hooks
        wb = parts.wb  # the session open when it was asked for
        try:
            opened = await asyncio.to_thread(load_session, path)
        except SessionFileError as exc:
            parts.notify(visible(str(exc)), title="cannot open session", severity=Severity.ERROR)
            return
        if parts.wb is not wb or hooks.answering():  # another session was asked for since, or a send began: it stays
            return
        parts.file.autosave(now=True)
        hooks.adopt(opened.session, path, opened.read_only)
        if opened.note:  # what reading it left out or kept as text, said as on the first open
            parts.notify(visible(opened.note), severity=Severity.WARNING, timeout=10)

    def new_session(self) -> None:
        parts, hooks = self.parts, self.hooks
        if hooks.answering():  # the reply would have to land in a session no longer shown
            return
        typed = self._carried_draft()
        parts.file.autosave(now=True)
        exact, cache_rule = parts.wb.exact, parts.wb.cache_rule
        hooks.adopt(hooks.fresh_session(), None, draft=typed)  # config.toml's policy and params, the server's window
        hooks.keep_server_template(exact, cache_rule)

    def _carried_draft(self) -> str:
        """What the composer holds, taken off the session left for a new one: it goes on being typed there, not
        saved with this one too (opening another file instead leaves it with this session, and shows that one's)."""
        session = self.parts.wb.session
        typed, session.draft = session.draft, ""
        return typed

    def continue_in_new_session(self) -> bool:
        """The session's whole history in a new session of its own, which this app then writes (the way on from a
        session another ctxpane holds). The draft stays in the composer. False when a reply is on its way."""
        parts, hooks = self.parts, self.hooks
        if hooks.answering():
            return False
        held = parts.file.session_file
        parts.file.autosave(now=True)  # a file this app writes gets its last state first (read-only: nothing)
        copy = forked(parts.wb.session)
        hooks.adopt(copy, None, draft=self._carried_draft())
        parts.file.autosave(now=True)
        left = f"; {held.name} is left as it is" if held is not None else ""
        parts.notify(visible(f"continued in a new session, {copy.title}: the whole history is kept{left}"),
                     timeout=10)
        return True

    def resend_from_step(self, session: Session, step: int) -> bool:
        """A replayed step becomes a new session, sent again (the old session is kept). False if it cannot be."""
        from tui.sessions.transfer import resend_session
        parts, hooks = self.parts, self.hooks
        if hooks.answering():
            return False
        try:
            copy = resend_session(session, step)
        except ValueError as exc:
            parts.notify(visible(str(exc)), severity=Severity.ERROR)
            return False
        typed = self._carried_draft()
        parts.file.autosave(now=True)
        hooks.adopt(copy, None, draft=typed)
        parts.notify(f"re-sending as a new session: {copy.title} (the old one is kept)")
        if parts.client is None:
            hooks.connect()
            parts.notify("connecting first: press Enter in an empty composer… or use 'Resend from focused message'")
            return True
        hooks.start_send()
        return True

    async def export_markdown(self) -> None:
        """The conversation as Markdown beside the session file (0600), written off the loop."""
        from tui.sessions import transfer
        from tui.sessions.store import sessions_dir, write_private

        from tui.controller.saver import snapshot
        parts = self.parts
        folder = parts.file.session_file.parent if parts.file.session_file else (parts.file.folder or sessions_dir())
        target = folder / f"{parts.wb.session.id}.md"
        session = snapshot(parts.wb.session)  # the loop may go on changing it while the thread writes

        def write() -> None:
            text = transfer.export_markdown(session)  # a big session takes a while: not on the loop
            folder.mkdir(parents=True, exist_ok=True)
            write_private(target, text)  # 0600, like the session itself
        try:
            await asyncio.to_thread(write)
        except OSError as exc:
            parts.notify(f"cannot write {target}: {exc}", severity=Severity.ERROR)
            return
        parts.notify(f"transcript written to {target}")
