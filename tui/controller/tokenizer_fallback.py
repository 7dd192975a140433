"""The server's tokenizer while it answers, a local one (an estimate) while it does not.

The engine counts in a worker thread; a server that goes away must neither crash that worker nor
leave the pane without numbers. `on_change(falling_back)` tells the app when the source of the
counts changes, so it can say so and start counting afresh (cached segment counts came from the
other tokenizer).
"""

from __future__ import annotations

from array import array
from typing import Any, Callable

from tui.client.errors import ClientError
from tui.context.families.identity import Identity, as_estimate, tokenizer_identity


class FallbackTokenizer:
    remote = True  # its calls may go over the network: never on the event loop

    def __init__(self, server: Any, local: Any, on_change: Callable[[bool], None]):
        self.server, self.local, self.on_change = server, local, on_change
        self.falling_back = False

    @property
    def name(self) -> str:
        if self.falling_back:
            return f"{self.local.name}, estimate: {self.server.name} unreachable"
        return self.server.name

    @property
    def identity(self) -> Identity:
        """The server's own while it answers; the local vocabulary, as an estimate, while it does not."""
        if self.falling_back:
            return as_estimate(tokenizer_identity(self.local), self.name)
        return tokenizer_identity(self.server)

    def _switch(self, falling_back: bool) -> None:
        if falling_back != self.falling_back:
            self.falling_back = falling_back
            self.on_change(falling_back)

    def _call(self, method: str, *args: Any) -> Any:
        if self.server.usable():
            try:
                result = getattr(self.server, method)(*args)
            except ClientError:  # TokenizerUnavailable and any other answer it could not use
                self._switch(True)
            else:
                self._switch(False)
                return result
        else:
            self._switch(True)
        return getattr(self.local, method)(*args)

    def plain_starts(self, text: str) -> tuple[array, bool]:
        return self._call("plain_starts", text)

    def special_count(self, text: str) -> int:
        return self._call("special_count", text)

    def encode_whole(self, text: str) -> int:
        return self._call("encode_whole", text)

    def specials(self) -> set[str]:
        return self.server.specials() | self.local.specials()

    def retry_due(self) -> bool:
        """While falling back: True once the server may be asked again."""
        return self.falling_back and self.server.usable()

    def close(self) -> None:
        self.server.close()
