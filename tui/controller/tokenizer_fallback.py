"""The server's tokenizer while it answers, a local one (an estimate) while it does not.

The engine counts in a worker thread; a server that goes away must neither crash that worker nor
leave the pane without numbers. `on_change(falling_back)` tells the app when the source of the
counts changes, so it can say so and start counting afresh (cached segment counts came from the
other tokenizer).
"""

from __future__ import annotations

from array import array
from typing import Callable, Protocol, TypeVar

from tui.client.errors import ClientError
from tui.context.families.identity import Identity, as_estimate, tokenizer_identity
from tui.context.tokens.tokenizers import Tokenizer

R = TypeVar("R")


class LocalTokenizer(Tokenizer, Protocol):
    """A shipped tokenizer or a tokenizer.json (what get_tokenizer loads): it also counts a whole text."""

    def encode_whole(self, text: str) -> int: ...


class CountingServer(Protocol):
    """The server's /tokenize as the fallback asks it (tui/client/server_tokenizer.py's ServerTokenizer)."""

    @property
    def name(self) -> str: ...
    def usable(self) -> bool: ...
    def plain_starts(self, text: str) -> tuple[array[int], bool]: ...
    def special_count(self, text: str) -> int: ...
    def encode_whole(self, text: str) -> int: ...
    def specials(self) -> set[str]: ...
    def close(self) -> None: ...


class FallbackTokenizer:
    remote = True  # its calls may go over the network: never on the event loop

    def __init__(self, server: CountingServer, local: LocalTokenizer, on_change: Callable[[bool], None]):
        self.server, self.local, self.on_change = server, local, on_change
        self.falling_back = False
        self.name = self._name()  # an attribute, as a Tokenizer's is: set again when the source changes

    def _name(self) -> str:
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
            self.name = self._name()
            self.on_change(falling_back)

    def _count(self, on_server: Callable[[CountingServer], R], locally: Callable[[LocalTokenizer], R]) -> R:
        """`on_server(server)` while it answers, else `locally(local)`."""
        if self.server.usable():
            try:
                result = on_server(self.server)
            except ClientError:  # TokenizerUnavailable and any other answer it could not use
                self._switch(True)
            else:
                self._switch(False)
                return result
        else:
            self._switch(True)
        return locally(self.local)

    def plain_starts(self, text: str) -> tuple[array[int], bool]:
        return self._count(lambda server: server.plain_starts(text), lambda local: local.plain_starts(text))

    def special_count(self, text: str) -> int:
        return self._count(lambda server: server.special_count(text), lambda local: local.special_count(text))

    def encode_whole(self, text: str) -> int:
        return self._count(lambda server: server.encode_whole(text), lambda local: local.encode_whole(text))

    def specials(self) -> set[str]:
        return self.server.specials() | self.local.specials()

    def retry_due(self) -> bool:
        """While falling back: True once the server may be asked again."""
        return self.falling_back and self.server.usable()

    def close(self) -> None:
        self.server.close()
