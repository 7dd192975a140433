"""Driving the Controller in tests, on a plain asyncio loop (no Textual): settings, a session, a listener."""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import pytest

from tui.context.messages import Message, Provenance
from tui.controller import AsyncioRuntime, Controller
from tui.controller.events import StatusChanged
from tui.sessions.model import Session


@dataclass
class Settings:
    """What the controller reads of the app's settings (tui/app/config.py has the real ones)."""

    base_url: str = ""
    model: str = ""
    api_key_env: str = "OPENAI_API_KEY"
    template: str = ""
    tokenizer: str = "o200k_base"
    scan_local: bool = False
    provider_count: str = ""
    api: str = ""
    review_base_url: str = ""
    review_model: str = ""
    source: dict = field(default_factory=lambda: {"base_url": "flag"})


def conversation() -> Session:
    return Session(title="three turns", messages=[
        Message("system", "You are terse.", provenance=Provenance("system_prompt", True), id="sys"),
        Message("user", "What is the quota?", id="m1"),
        Message("assistant", "250 GB.", provenance=Provenance("model", True), id="m2"),
        Message("user", "And the price?", id="m3")])


class Harness:
    def __init__(self, tmp_path, **settings) -> None:
        self.events: list = []
        self.runtime = AsyncioRuntime()
        self.ctl = Controller(Settings(**settings), self.runtime, self.events.append, tmp_path / "sessions")

    async def idle(self) -> None:
        """Wait until what the last change started is over: its jobs, the timers it set (a settle, a save) and
        the save its own thread writes."""
        while True:
            await self.runtime.idle()
            writer = self.ctl.file.writer  # saves are written by their own thread
            if writer is not None:
                await asyncio.to_thread(writer.wait_idle, 10)
            if self.runtime.busy() is None:
                return

    async def until_replied(self) -> None:
        """Wait until no reply streams any more (what a send started is over)."""
        for _ in range(3):  # the send's job ends with the reply; a reply still streaming after it is a bug
            await self.idle()
            if not self.ctl.streaming:
                return
        raise AssertionError("the reply never ended")

    async def send(self, text: str) -> None:
        """Send `text` as the user would, and wait for the whole reply."""
        assert self.ctl.submit(text)
        await self.until_replied()

    def of(self, kind) -> list:
        return [event for event in self.events if isinstance(event, kind)]

    async def ready(self, session: Session | None = None, path=None) -> Controller:
        """A session open, the tokenizer loaded, its view computed."""
        self.ctl.adopt(session or conversation(), path)
        self.ctl.load_tokenizer()
        await self.idle()
        assert self.ctl.wb.view is not None
        return self.ctl


@pytest.fixture()
async def harness(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    made = Harness(tmp_path)
    yield made
    made.ctl.close()


async def connected(tmp_path, url: str, **settings) -> Harness:
    made = Harness(tmp_path, base_url=url, **settings)
    await made.ready()
    made.ctl.connect()
    await made.idle()
    assert made.ctl.client is not None, [e for e in made.events if isinstance(e, StatusChanged)]
    return made


def eight_turns() -> list[Message]:
    """Four exchanges of ~35 tokens each: over a 260-token window, so the summarise policy has work to do."""
    return [Message("user" if i % 2 == 0 else "assistant", f"turn {i} " + "words " * 30, id=f"t{i}") for i in range(8)]


async def summarised(made: "Harness", text: str = "what now?") -> None:
    """Send `text` under the summarise policy with a history too long for its window: a summary is made first."""
    ctl = made.ctl
    ctl.wb.session.messages.extend(eight_turns())
    ctl.wb.set_policy(name="summarise", context_window=260, max_tokens=20)
    ctl.refresh()
    ctl.submit(text)
    await made.idle()


@asynccontextmanager
async def summarised_on_a_server(tmp_path):
    """Connected to a loopback server, a history too long for the window sent under the summarise policy: yields
    (harness, server) once the summary is made; the controller is closed after."""
    from fault_server import FaultServer
    with FaultServer(delay=0.01) as server:
        made = await connected(tmp_path, server.url + "/ok")
        try:
            await summarised(made)
            assert made.ctl.wb.session.policy["summary"] == "whole reply"
            yield made, server
        finally:
            made.ctl.close()
