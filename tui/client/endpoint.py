"""Where requests go, and the key that goes with them (kept out of every repr, log and file).

The key goes only to an address the user chose: a flag, `$OPENAI_BASE_URL` (or another variable),
the config file, or one the user picked or confirmed in the app. An address found anywhere else (a
session file, an imported body, a server's answer, a port scan) is a suggestion: its Endpoint never
holds the key. Even a chosen endpoint sends the key only to its own origin (scheme, host and port),
so neither a redirect nor a probe of another origin carries it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit

from tui.client.keys import key_named
from tui.context.untrusted.redaction import Redactor, searchable

DEFAULT_KEY_ENV = "OPENAI_API_KEY"
# Where a base URL may come from for the key to go with it. Anything else is a suggestion.
KEY_SOURCES = frozenset({"flag", "env", "config", "user"})
SUGGESTED_SOURCES = frozenset({"session", "import", "server", "scan"})
_DEFAULT_PORTS = {"http": 80, "https": 443}


class EndpointError(ValueError):
    """A base URL that cannot be used."""


def normalise_base_url(url: str) -> str:
    """`http://host:8080`, `http://host:8080/`, `http://host:8080/v1/` all become `http://host:8080/v1`."""
    text = (url or "").strip()
    if not text:
        raise EndpointError("no base URL given")
    if "://" not in text:
        text = "http://" + text
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - raises on a port that is not a number or out of range
    except ValueError as exc:
        raise EndpointError(f"not a usable URL: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise EndpointError(f"not an http(s) URL: {url!r}")
    path = parts.path.rstrip("/")
    if not path.endswith("/v1"):
        path += "/v1"
    return f"{parts.scheme}://{parts.netloc}{path}"


def origin_of(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) with the default port filled in: two URLs share an origin when these match."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return ("", "", -1)
    scheme = parts.scheme.lower()
    return scheme, (parts.hostname or "").lower(), port or _DEFAULT_PORTS.get(scheme, -1)


def key_source(source: str) -> str:
    """The canonical name of where a base URL came from, also for the app's own labels.

    `flag`, `env` (or `$NAME`), `config` (or `config.toml`), `user` allow the key; anything else
    (`session`, `import`, `server`, `scan`, `found … on …`, unknown) does not.
    """
    text = (source or "").strip()
    if text.startswith("$"):
        return "env"
    if text == "config.toml":
        return "config"
    return text if text in KEY_SOURCES | SUGGESTED_SOURCES else "unknown"


@dataclass
class Endpoint:
    base_url: str
    model: str = ""
    key_env: str = DEFAULT_KEY_ENV
    _key: str | None = field(default=None, repr=False)
    source: str = "flag"  # where base_url came from: see key_source()
    key_withheld: bool = False  # a key was at hand but this address was not chosen by the user
    api: str = "chat"  # the API the chat speaks to it: chat (completions), responses or messages

    def __post_init__(self) -> None:
        self.base_url = normalise_base_url(self.base_url)
        self.source = key_source(self.source)
        if self._key and not self.key_allowed:
            self._key, self.key_withheld = None, True

    @classmethod
    def from_env(cls, base_url: str, model: str = "", key_env: str | None = None,
                 source: str = "flag") -> "Endpoint":
        """The key read from `$key_env`, kept only when `source` allows it (see endpoint_for)."""
        env = key_env or DEFAULT_KEY_ENV
        return cls(base_url, model, env, key_named(env), source)

    @property
    def key_allowed(self) -> bool:
        """True when base_url came from the user (flag, env, config, or picked in the app)."""
        return self.source in KEY_SOURCES

    @property
    def root(self) -> str:
        """The server root, where llama.cpp, Ollama and vLLM keep their extra endpoints."""
        return self.base_url[: -len("/v1")]

    @property
    def host(self) -> str:
        return urlsplit(self.base_url).netloc

    @property
    def origin(self) -> tuple[str, str, int]:
        return origin_of(self.base_url)

    @property
    def has_key(self) -> bool:
        return bool(self._key)

    @property
    def secrets(self) -> list[str]:
        """What must never be written anywhere (for session and export redaction). Whether free text is searched
        for it is the redactor's rule (tui/context/untrusted/redaction.py): a placeholder such as "x" or "anything" is not."""
        return [self._key] if self._key else []

    @property
    def key_searchable(self) -> bool:
        """Does the key look like a secret, so that texts may be searched for it without rewriting words?"""
        return searchable(self._key) if self._key else False

    def may_carry_key(self, url: str) -> bool:
        """The key goes with a request only to this endpoint's own origin, and only if allowed."""
        return self.has_key and self.key_allowed and origin_of(url) == self.origin

    def auth_headers(self, url: str | None = None, style: str = "") -> dict[str, str]:
        """The key's header for a request to `url` (default: this endpoint), or none: Authorization (OpenAI's
        and every compatible server's), or the header a provider's own API reads it from (`style`)."""
        key = self._key
        if not key or not self.may_carry_key(url or self.base_url):  # (a key it may carry is set)
            return {}
        if style == "anthropic":
            return {"x-api-key": key}
        if style == "gemini":
            return {"x-goog-api-key": key}
        return {"Authorization": f"Bearer {key}"}

    def redact(self, text: str) -> str:
        """Remove the key from a server's text before it is shown, logged or saved, even a cut-off start of it
        (only a key that looks like a secret: a placeholder key is an ordinary word)."""
        return Redactor(self.secrets).text(text)


def endpoint_for(base_url: str, source: str, model: str = "", key_env: str | None = None) -> Endpoint:
    """The Endpoint for `base_url`, holding the key from `$key_env` only when `source` allows it.

    Raises EndpointError for a URL that cannot be used. `endpoint.key_withheld` tells the app that a
    key exists but was not attached (ask the user, then call again with source="user").
    """
    return Endpoint.from_env(base_url, model, key_env, source)
