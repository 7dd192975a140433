"""The server's own tokenizer (llama.cpp `/tokenize`), usable by the engine like a local one.

Blocking calls: the engine runs its counts in a worker thread, and its segment cache means each
distinct piece of text is sent once, not on every keystroke.

Every failure (server gone, timeout, an answer of the wrong shape or size) raises
`TokenizerUnavailable`, and marks the tokenizer unhealthy until `retry_at` (a monotonic time, backing
off from 2 s to 30 s). Until then calls fail at once without touching the network, so the caller
counts with a local tokenizer (an estimate) and asks again later: `usable()` says when to try,
`ping()` tries.
"""

from __future__ import annotations

import threading
import time
from array import array
from itertools import accumulate
from typing import Callable

import httpx

from tui.context.families.identity import SERVER, Identity
from tui.context.tokens.pieces import TokenStarts

from tui.client.endpoint import Endpoint
from tui.client.errors import ClientError, MalformedAnswer, ReadTimedOut, TokenizerUnavailable, TooLarge
from tui.client.failures import status_error, transport_error
from tui.client.schemas import Token, Tokenized, decode

FIRST_BACKOFF, LAST_BACKOFF = 2.0, 30.0


class ServerTokenizer:
    remote = True  # its calls go over the network: never on the event loop

    def __init__(self, endpoint: Endpoint, specials: set[str] | None = None, timeout: float = 2.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.endpoint = endpoint
        self.name = f"server:{endpoint.host}"  # for display
        self.identity = Identity(None, SERVER, None, self.name)  # the server counts: the model's own tokenizer
        self.timeout = timeout
        self._specials = set(specials or ())
        self._clock = clock
        self._lock = threading.Lock()
        self.healthy = True
        self.retry_at = 0.0
        self.last_error = ""
        self._backoff = FIRST_BACKOFF
        self._http = httpx.Client(timeout=httpx.Timeout(timeout), follow_redirects=False,
                                  headers={"Accept-Encoding": "identity"})

    # -- health ------------------------------------------------------------------------------
    def usable(self) -> bool:
        """True when a call may reach the server: healthy, or the back-off has passed."""
        return self.healthy or self._clock() >= self.retry_at

    def ping(self) -> bool:
        """Try the server now (when the back-off allows): True when it answers correctly."""
        try:
            self._tokenize("x", False)
        except TokenizerUnavailable:
            return False
        return True

    def _failed(self, exc: ClientError) -> TokenizerUnavailable:
        with self._lock:
            self.healthy = False
            self.retry_at = self._clock() + self._backoff
            self._backoff = min(self._backoff * 2, LAST_BACKOFF)
            self.last_error = self.endpoint.redact(exc.message)
        return TokenizerUnavailable(f"the server's tokenizer is unavailable ({self.last_error}): counting "
                                    "locally, an estimate", self.retry_at)

    def _recovered(self) -> None:
        with self._lock:
            self.healthy, self.retry_at, self._backoff, self.last_error = True, 0.0, FIRST_BACKOFF, ""

    # -- calls -------------------------------------------------------------------------------
    def _tokenize(self, text: str, parse_special: bool) -> list[Token]:
        if not self.usable():
            raise TokenizerUnavailable(f"the server's tokenizer is unavailable ({self.last_error}): counting "
                                       "locally, an estimate", self.retry_at)
        try:
            tokens = self._request(text, parse_special)
        except ClientError as exc:
            raise self._failed(exc) from None
        self._recovered()
        return tokens

    def _request(self, text: str, parse_special: bool) -> list[Token]:
        url = self.endpoint.root + "/tokenize"
        size = len(text.encode("utf-8", "surrogatepass"))
        limit = max(1 << 20, 64 * size)
        body = {"content": text, "with_pieces": True, "parse_special": parse_special}
        try:
            with self._http.stream("POST", url, json=body, headers=self.endpoint.auth_headers(url)) as response:
                raw = self._read(response, limit, url)
        except httpx.HTTPError as exc:
            raise transport_error(exc, self.endpoint, None) from None
        tokens = decode(raw, Tokenized, "the server's /tokenize answer", self.endpoint.redact).tokens
        pieces = [t for t in tokens if isinstance(t, Token)]
        if len(tokens) > size + 64 or len(pieces) != len(tokens):
            raise MalformedAnswer(f"the server's /tokenize answer has {len(tokens)} tokens for {size} bytes, "
                                  "or tokens without pieces")
        return pieces

    def _read(self, response: httpx.Response, limit: int, url: str) -> bytes:
        if 300 <= response.status_code < 400:  # not followed: the key stays where it was sent
            raise ClientError(f"{url} redirects elsewhere ({response.status_code}); the tokenizer does not follow")
        if response.status_code >= 400:
            raw = self._bounded(response, 65536, url, strict=False)
            raise status_error(response.status_code, None, raw, url, self.endpoint)
        return self._bounded(response, limit, url, strict=True)

    def _bounded(self, response: httpx.Response, limit: int, url: str, strict: bool) -> bytes:
        deadline = self._clock() + 2 * self.timeout  # a trickle of bytes does not hold the count up
        parts: list[bytes] = []
        received = 0
        for piece in response.iter_bytes():
            parts.append(piece)
            received += len(piece)
            if received > limit:
                if not strict:
                    break
                raise TooLarge(f"the answer of {url} passed {limit:,} bytes")
            if self._clock() > deadline:
                raise ReadTimedOut(f"the answer of {url} took longer than {2 * self.timeout:g}s")
        return b"".join(parts)[:limit]

    def plain_starts(self, text: str) -> tuple[TokenStarts, bool]:
        # Pieces are text, or byte lists where a token splits a UTF-8 character: count bytes.
        lengths = (len(t.piece.encode("utf-8", "surrogatepass")) if isinstance(t.piece, str) else len(t.piece)
                   for t in self._tokenize(text, False))
        starts = array("q", accumulate(lengths, initial=0))
        return starts[:-1], True

    def special_count(self, text: str) -> int:
        return len(self._tokenize(text, True))

    def specials(self) -> set[str]:
        return set(self._specials)

    def encode_whole(self, text: str) -> int:
        return len(self._tokenize(text, True))

    def close(self) -> None:
        self._http.close()
