"""Prompt history: Up/Down in an empty composer step through what was sent, this session's first, then every
other session's (tui/sessions/prompt_history.py keeps those); Ctrl+R searches them all."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from tui.client.keys import held_keys
from tui.sessions.prompt_history import PromptHistory
from tui.controller.events import Severity

if TYPE_CHECKING:
    from tui.controller.parts import Parts

MAX_FOUND = 200


class Recall:
    def __init__(self, parts: "Parts", history: PromptHistory | None = None) -> None:
        self.parts = parts
        self.history = history or PromptHistory()
        self._place = -1  # where Up has got to in `entries` (-1: at the draft)
        self._entries: list[str] = []
        self._draft = ""  # what the composer held before the first Up, given back at the end of Down

    def entries(self) -> list[str]:
        """Newest first, each once: this session's own questions, then those sent in other sessions."""
        own = [m.text() for m in reversed(self.parts.wb.session.messages)
               if m.role == "user" and m.provenance.source == "user"]
        others = [prompt.text for prompt in reversed(self.history.prompts())]
        return list(dict.fromkeys(text for text in own + others if text.strip()))

    def older(self, draft: str) -> str | None:
        if self._place < 0:
            self._entries, self._draft = self.entries(), draft
        if self._place + 1 >= len(self._entries):
            return None
        self._place += 1
        return self._entries[self._place]

    def newer(self) -> str | None:
        if self._place < 0:
            return None
        self._place -= 1
        return self._draft if self._place < 0 else self._entries[self._place]

    def reset(self) -> None:
        self._place = -1

    def search(self, query: str) -> list[str]:
        """Entries holding every word of `query` (any case), newest first."""
        words = query.lower().split()
        return [text for text in self.entries() if all(word in text.lower() for word in words)][:MAX_FOUND]

    def remember(self, text: str) -> None:
        """A prompt was sent: kept for later sessions (the file written off the loop)."""
        self.reset()
        if self.history.add(text, self.parts.wb.session.id, self._keys()):
            self.parts.runtime.spawn(self._write, "prompt-history")

    def _keys(self) -> set[str]:
        """Every key the process knows of, attached to the connection or not: the connection's, the one the settings'
        variable names (config.toml, a flag, the settings screen), and all those tui/client/keys.py holds. The
        history masks each (a placeholder such as "x" masks nothing: every prompt would hold it)."""
        client = self.parts.client
        return {*held_keys([self.parts.settings.api_key_env]), *(client.endpoint.secrets if client else ())}

    def preload(self) -> None:
        """Read the history off the loop before the first Up needs it."""
        async def read() -> None:
            await asyncio.to_thread(self.history.prompts)
        self.parts.runtime.spawn(read, "prompt-history-read")

    async def _write(self) -> None:
        await asyncio.to_thread(self.history.write)
        if self.history.problem:
            self.parts.notify(self.history.problem, severity=Severity.WARNING)
