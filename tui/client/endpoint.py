"""Where requests go, and the key that goes with them (kept out of every repr, log and file)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from urllib.parse import urlsplit

DEFAULT_KEY_ENV = "OPENAI_API_KEY"


class EndpointError(ValueError):
    """A base URL that cannot be used."""


def normalise_base_url(url: str) -> str:
    """`http://host:8080`, `http://host:8080/`, `http://host:8080/v1/` all become `http://host:8080/v1`."""
    text = (url or "").strip()
    if not text:
        raise EndpointError("no base URL given")
    if "://" not in text:
        text = "http://" + text
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise EndpointError(f"not an http(s) URL: {url!r}")
    path = parts.path.rstrip("/")
    if not path.endswith("/v1"):
        path += "/v1"
    return f"{parts.scheme}://{parts.netloc}{path}"


@dataclass
class Endpoint:
    base_url: str
    model: str = ""
    key_env: str = DEFAULT_KEY_ENV
    _key: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.base_url = normalise_base_url(self.base_url)

    @classmethod
    def from_env(cls, base_url: str, model: str = "", key_env: str | None = None) -> "Endpoint":
        env = key_env or DEFAULT_KEY_ENV
        return cls(base_url, model, env, os.environ.get(env) or None)

    @property
    def root(self) -> str:
        """The server root, where llama.cpp, Ollama and vLLM keep their extra endpoints."""
        return self.base_url[: -len("/v1")]

    @property
    def host(self) -> str:
        return urlsplit(self.base_url).netloc

    @property
    def has_key(self) -> bool:
        return bool(self._key)

    def auth_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._key}"} if self._key else {}

    def redact(self, text: str) -> str:
        """Remove the key from any text before it is shown, logged or saved."""
        return text.replace(self._key, "***") if self._key else text
