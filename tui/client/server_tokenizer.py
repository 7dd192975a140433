"""The server's own tokenizer (llama.cpp `/tokenize`), usable by the engine like a local one.

Blocking calls: the engine runs its counts in a worker thread, and its segment cache means each
distinct piece of text is sent once, not on every keystroke.
"""

from __future__ import annotations

from array import array
from itertools import accumulate

import httpx

from .endpoint import Endpoint


class ServerTokenizer:
    def __init__(self, endpoint: Endpoint, specials: set[str] | None = None, timeout: float = 30.0):
        self.endpoint = endpoint
        self.name = f"server:{endpoint.host}"
        self._specials = set(specials or ())
        self._http = httpx.Client(timeout=timeout, headers=endpoint.auth_headers(), follow_redirects=False)

    def _tokenize(self, text: str, parse_special: bool) -> list[dict]:
        response = self._http.post(self.endpoint.root + "/tokenize",
                                   json={"content": text, "with_pieces": True, "parse_special": parse_special})
        response.raise_for_status()
        return response.json()["tokens"]

    def plain_starts(self, text: str) -> tuple[array, bool]:
        # Pieces are text, or byte lists where a token splits a UTF-8 character: count bytes.
        lengths = (len(t["piece"].encode("utf-8")) if isinstance(t["piece"], str) else len(t["piece"])
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
