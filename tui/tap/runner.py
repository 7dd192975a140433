"""A running tap: the proxy and the recorder together, for the headless command, the app and the tests."""

from __future__ import annotations

import asyncio

import ipaddress
import sys
from pathlib import Path
from typing import Callable

from tui.tap.recorder import Recorder, Tapped
from tui.tap.server import DEFAULT_MAX_BODY, TapServer

SWITCH_INTERVAL = 0.0005  # seconds


def is_loopback(host: str) -> bool:
    """Is `host` this machine's loopback, however it is written: `localhost.`, `x.localhost`, `127.1`,
    `0x7f.1`, `::1`, `::ffff:127.0.0.1` (no name is looked up)."""
    address = _address(host)
    if address is None:
        name = host.strip().rstrip(".").lower()
        return name == "localhost" or name.endswith(".localhost")
    mapped = getattr(address, "ipv4_mapped", None)
    return address.is_loopback or bool(mapped and mapped.is_loopback)


def is_this_machine(host: str) -> bool:
    """Loopback, or the unspecified address (0.0.0.0, ::), which a connection reaches this machine by."""
    address = _address(host)
    return is_loopback(host) or bool(address is not None and address.is_unspecified)


def _address(host: str):
    import socket
    text = host.strip().strip("[]")
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        pass
    try:  # the shorthand IPv4 forms the C library accepts: 127.1, 0x7f.1, 2130706433
        return ipaddress.ip_address(socket.inet_aton(text)) if text and all(c in "0123456789abcdefxABCDEFX."
                                                                              for c in text) else None
    except OSError:
        return None


class Tap:
    def __init__(self, upstream: str, folder: Path, host: str = "127.0.0.1", port: int = 8089,
                 max_body: int = DEFAULT_MAX_BODY, on_change: Callable[[str, Tapped], None] | None = None,
                 engine_source=None):
        from tui.tap.engine import learn_engine

        self.server = TapServer(upstream, host, port, max_body)
        source = engine_source or (lambda model: learn_engine(upstream, model))
        self.recorder = Recorder(self.server.upstream, folder, source, on_change)
        self.server.listeners.append(self.recorder.listen)

    async def start(self) -> str:
        # The recorder renders and counts on its own thread: a short switch interval lets the event loop take
        # the interpreter back within a fraction of a millisecond when a chunk arrives (the default is 5 ms).
        sys.setswitchinterval(min(sys.getswitchinterval(), SWITCH_INTERVAL))
        return await self.server.start()

    @property
    def url(self) -> str:
        return self.server.url

    async def close(self) -> None:
        await self.server.close()
        await asyncio.to_thread(self.recorder.close, True)  # (the loop stays free: a second Ctrl+C is heard)
