"""Sessions in the app: saving as you go, replay, re-send a step, browse, new, export."""


from __future__ import annotations

from pathlib import Path


from tui.context.safety import visible
from tui.context.tokens import TokenizerNotFound, get_tokenizer
from tui.sessions.model import Session
from tui.sessions.store import session_text, write_atomic, SessionFileError, SessionLock, SessionLocked, load_session, save_session, session_path




class SessionActionsMixin:
    """Methods of CtxpaneApp, kept in their own file."""

    def autosave(self, now: bool = False) -> None:
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

    def _save_in_background(self) -> None:
        """While a reply streams: the text is made here, the disk write (with its fsync) runs elsewhere.

        One writer thread keeps the writes in order, so an older state never lands after a newer one.
        """
        if self.session_file is None or self.read_only:
            return
        if getattr(self, "_writer", None) is None:
            from concurrent.futures import ThreadPoolExecutor
            self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ctxpane-save")
        secrets = self._secrets()
        self._writer.submit(write_atomic, self.session_file, session_text(self.wb.session, secrets))

    def _save(self) -> None:
        self._save_timer = None
        writer = getattr(self, "_writer", None)
        if writer is not None:  # let queued background writes land first: this one is the newest
            writer.submit(lambda: None).result()
        if self.session_file is None or self.read_only:
            return
        secrets = self._secrets()
        try:
            save_session(self.wb.session, self.session_file, secrets)
        except OSError as exc:
            self.notify(f"could not save the session: {exc}", severity="error")

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

