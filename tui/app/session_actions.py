"""Sessions in the app: saving as you go, replay, re-send a step, browse, new, export."""


from __future__ import annotations

from pathlib import Path


from tui.context.safety import visible
from tui.context.tokens import TokenizerNotFound, get_tokenizer
from tui.sessions.model import Session
from tui.sessions.store import SessionFileError, SessionLock, SessionLocked, load_session, session_path

from .saver import FLUSH_SECONDS, SaveFailure, SessionWriter, snapshot




class SessionActionsMixin:
    """Methods of CtxpaneApp, kept in their own file."""

    def autosave(self, now: bool = False) -> None:
        """Save soon (changes within 0.3 s are written once), or now; never waits for the disk."""
        if self.read_only or not self.wb.session.messages:
            return
        if self.session_file is None:
            folder = self.options.sessions_folder
            self.session_file = session_path(self.wb.session, folder)
            self.lock = SessionLock(self.session_file)
            try:
                self.lock.acquire()
            except SessionLocked:
                self.lock = None
        self._unsaved = True
        if now:
            self._save()
        elif self._save_timer is None:
            self._save_timer = self.set_timer(0.3, self._save)

    def _secrets(self) -> list[str]:
        """What no file may hold: the key in use, and the key in the environment even when it was not sent."""
        import os
        found = list(self.client.endpoint.secrets) if self.client else []
        key = os.environ.get(self.settings.api_key_env) or ""
        if len(key) >= 8 and key not in found:  # a placeholder such as "x" is no secret: masking it rewrites text
            found.append(key)
        return found

    @property
    def saver(self) -> SessionWriter:
        if self._writer is None:
            self._writer = SessionWriter(self._save_failed)
        return self._writer

    def _save_in_background(self) -> None:
        """While a reply streams: the same as any save (a snapshot handed to the writer thread)."""
        self._save()

    def _save(self) -> None:
        """Hand a snapshot of the session to the writer thread; the event loop does not wait for it."""
        if self._save_timer is not None:
            self._save_timer.stop()
        self._save_timer = None
        if self.session_file is None or self.read_only:
            return
        self._unsaved = False
        self.saver.save(snapshot(self.wb.session), self.session_file, self._secrets())

    def _save_failed(self, failure: SaveFailure) -> None:
        """From the writer thread: a write failed (the file keeps its previous content)."""
        try:
            self.call_from_thread(self.notify, str(failure), severity="error", timeout=15)
        except RuntimeError:
            pass  # the app has ended: quitting reports it

    def finish_saving(self, timeout: float = FLUSH_SECONDS) -> None:
        """On quit: the last state handed over, then at most `timeout` s for it to land."""
        if self._streaming or self._unsaved:
            self._save()
        if self._writer is not None:
            failure = self._writer.close(timeout)
            if failure is not None:
                self.save_failure = str(failure)

    # -- sessions -----------------------------------------------------------------------------------
    def action_replay(self, start: int = 0) -> None:
        from tui.sessions.replay import Replayer, offline_tokenizer_name

        from .replay_screen import ReplayScreen
        session = self.wb.session
        if not session.requests:
            self.notify("this session has no requests to replay yet", severity="warning")
            return
        spec = offline_tokenizer_name(session.tokenizer, self.wb.template)
        try:
            tokenizer = get_tokenizer(spec)
        except TokenizerNotFound as exc:
            self.notify(visible(str(exc)), severity="error")
            return
        self.push_screen(ReplayScreen(session, Replayer(session, self.wb.template, tokenizer), self.roles, start))

    def resend_from_step(self, session: Session, step: int) -> None:
        from tui.sessions.transfer import resend_session
        try:
            copy = resend_session(session, step)
        except ValueError as exc:
            self.notify(visible(str(exc)), severity="error")
            return
        self.autosave(now=True)
        while len(self.screen_stack) > 1:
            self.pop_screen()
        self.read_only, self.replay_only = False, False
        self._adopt(copy, None)
        self.refresh_all()
        self.notify(f"re-sending as a new session: {copy.title} (the old one is kept)")
        if self.client is None:
            self.connect_endpoint()
            self.notify("connecting first: press Enter in an empty composer… or use 'Resend from focused message'")
            return
        body, view = self.wb.commit_draft()
        self.send(body, view)

    def action_open_session(self) -> None:
        from tui.sessions.store import sessions_dir, write_private

        from .browser_screen import BrowserScreen
        folder = self.options.sessions_folder or sessions_dir()

        def done(path: Path | None) -> None:
            if path is None or path == self.session_file:
                return
            try:
                opened = load_session(path)
            except SessionFileError as exc:
                self.notify(visible(str(exc)), title="cannot open session", severity="error")
                return
            self.autosave(now=True)
            self.read_only = opened.read_only
            self._adopt(opened.session, path)
            self.refresh_all()
        self.push_screen(BrowserScreen(folder, self.session_file), done)

    def action_new_session(self) -> None:
        self.autosave(now=True)
        self.read_only = False
        session = Session(base_url=self.wb.session.base_url, model=self.wb.session.model)
        self._adopt(session, None)
        self.refresh_all()

    def action_export_markdown(self) -> None:
        from tui.sessions.transfer import export_markdown
        from tui.sessions.store import sessions_dir, write_private
        folder = self.session_file.parent if self.session_file else (self.options.sessions_folder or sessions_dir())
        target = folder / f"{self.wb.session.id}.md"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            write_private(target, export_markdown(self.wb.session))  # 0600, like the session itself
        except OSError as exc:
            self.notify(f"cannot write {target}: {exc}", severity="error")
            return
        self.notify(f"transcript written to {target}")

