"""Which session is open: at start-up, from the browser, a new one, a replayed step sent again; and export.

Transitions of the Controller, kept here: session files are read and written off the event loop.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from tui.context.untrusted.visible import visible
from tui.sessions.model import Session, recover_interrupted_reply
from tui.sessions.store import Opened, SessionFileError, load_session

from tui.controller.samples import sample_session
from tui.controller.events import Severity, Tone

if TYPE_CHECKING:
    from tui.controller.controller import Controller


def read_and_recover(path: Path) -> tuple[Opened, bool]:
    """In a worker: the session read and checked, and a reply a kill cut short restored (it is no one's yet)."""
    opened = load_session(path)
    return opened, recover_interrupted_reply(opened.session)


class Opening:
    def __init__(self, controller: "Controller") -> None:
        self.ctl = controller

    async def open_first(self, path: Path | None, offline: bool) -> None:
        """At start-up: the file named, else the sample (offline) or an empty session. Read off the loop;
        what was typed meanwhile stays the draft."""
        ctl = self.ctl
        if path is not None:
            ctl.status(f"opening {path.name}…")
            try:
                opened = await asyncio.to_thread(read_and_recover, path)
            except SessionFileError as exc:
                ctl.notify(visible(str(exc)), title="cannot open session", severity=Severity.ERROR, timeout=60)
                ctl.status(visible(f"could not open {path.name}: a new session was started instead (the file is "
                                   "left as it is)"), Tone.BAD)
                ctl.adopt(ctl.tuning.fresh_session(), None, draft=ctl.wb.draft)  # never another session (a sample)
                return
            else:
                self._opened_first(*opened, path)
                return
        if offline or not (ctl.settings.base_url or ctl.settings.scan_local):
            ctl.adopt(sample_session(), None, draft=ctl.wb.draft)
            return
        ctl.adopt(ctl.tuning.fresh_session(), None, draft=ctl.wb.draft)

    def _opened_first(self, opened: Opened, recovered: bool, path: Path) -> None:
        ctl = self.ctl
        if opened.note:
            ctl.notify(visible(opened.note), severity=Severity.WARNING, timeout=10)
        ctl.adopt(opened.session, path, opened.read_only, draft=ctl.wb.draft)
        ctl.status("")
        if recovered:
            ctl.notify("the last reply was cut short: what had arrived is restored, marked incomplete",
                       severity=Severity.WARNING, timeout=10)
            ctl.file.autosave(now=True)

    def open_file(self, path: Path | None) -> None:
        ctl = self.ctl
        if path is not None and path != ctl.file.session_file and not ctl.answering():
            ctl.runtime.spawn(lambda: self._open_file(path), "open")

    async def _open_file(self, path: Path) -> None:
        ctl = self.ctl
        wb = ctl.wb  # the session open when it was asked for
        try:
            opened = await asyncio.to_thread(load_session, path)
        except SessionFileError as exc:
            ctl.notify(visible(str(exc)), title="cannot open session", severity=Severity.ERROR)
            return
        if ctl.wb is not wb or ctl.answering():  # another session was asked for since, or a send began: it stays
            return
        ctl.file.autosave(now=True)
        ctl.adopt(opened.session, path, opened.read_only)

    def new_session(self) -> None:
        ctl = self.ctl
        if ctl.answering():  # the reply would have to land in a session no longer shown
            return
        ctl.file.autosave(now=True)
        exact, cache_rule = ctl.wb.exact, ctl.wb.cache_rule
        ctl.adopt(ctl.tuning.fresh_session(), None)  # config.toml's policy and params, the server's window
        ctl.tuning.keep_server_template(exact, cache_rule)

    def resend_from_step(self, session: Session, step: int) -> bool:
        """A replayed step becomes a new session, sent again (the old session is kept). False if it cannot be."""
        from tui.sessions.transfer import resend_session
        ctl = self.ctl
        if ctl.answering():
            return False
        try:
            copy = resend_session(session, step)
        except ValueError as exc:
            ctl.notify(visible(str(exc)), severity=Severity.ERROR)
            return False
        ctl.file.autosave(now=True)
        ctl.adopt(copy, None)
        ctl.notify(f"re-sending as a new session: {copy.title} (the old one is kept)")
        if ctl.client is None:
            ctl.connect()
            ctl.notify("connecting first: press Enter in an empty composer… or use 'Resend from focused message'")
            return True
        ctl.sending.start()
        return True

    async def export_markdown(self) -> None:
        """The conversation as Markdown beside the session file (0600), written off the loop."""
        from tui.sessions import transfer
        from tui.sessions.store import sessions_dir, write_private

        from tui.controller.saver import snapshot
        ctl = self.ctl
        folder = ctl.file.session_file.parent if ctl.file.session_file else (ctl.file.folder or sessions_dir())
        target = folder / f"{ctl.wb.session.id}.md"
        session = snapshot(ctl.wb.session)  # the loop may go on changing it while the thread writes

        def write() -> None:
            text = transfer.export_markdown(session)  # a big session takes a while: not on the loop
            folder.mkdir(parents=True, exist_ok=True)
            write_private(target, text)  # 0600, like the session itself
        try:
            await asyncio.to_thread(write)
        except OSError as exc:
            ctl.notify(f"cannot write {target}: {exc}", severity=Severity.ERROR)
            return
        ctl.notify(f"transcript written to {target}")
