"""The server the session talks to: the client, what connecting found, and where the API key may go.

The key goes only where the user pointed: a flag, the environment, config.toml, or a URL they
confirmed in the app. A URL from a session file or found by scanning gets no key. (Moved here from
the app's sending mixin; the rule is unchanged.)
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Callable

from tui.client.endpoint import Endpoint
from tui.context.tokens.tokenizers import get_tokenizer

if TYPE_CHECKING:
    from tui.client.connect import Connection
    from tui.client.http import OpenAIClient
    from tui.context.templates.library import ChatTemplate
    from tui.context.fit.window_claims import WindowClaim

    from tui.controller.parts import Settings
    from tui.controller.tokenizer_fallback import FallbackTokenizer

DEFAULT_URL = "http://127.0.0.1:8080/v1"


class Link:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.client: OpenAIClient | None = None  # once connected
        self.connection: Connection | None = None  # what connecting found
        self.trusted_urls: set[str] = set()  # URLs from files the user agreed to send the key to
        self.refused = False  # the server refused to talk without (or with this) key: its counts were never seen
        self.placeholder_said = False  # the notice that a placeholder key is not searched for was shown
        self.status_line = ""  # what the status line says while all is well (the endpoint, once connected)
        self.window_claim: WindowClaim | None = None  # a window one request revealed, until another agrees

    @property
    def unseen(self) -> bool:
        """True when the server's own counting cannot be seen: it refused the key, or a gateway hides it."""
        return self.refused or bool(self.connection is not None and self.connection.info.gateway)

    def url(self, session_url: str) -> str:
        """The base URL requests go to (or would go to)."""
        return self.client.endpoint.base_url if self.client else (session_url or DEFAULT_URL)

    def where_to_connect(self, session_url: str) -> tuple[str, str]:
        """The base URL to try and where it came from (a flag, the environment, config.toml, or the session)."""
        return self.settings.base_url or session_url, self.settings.source.get("base_url", "session")

    def endpoint_for(self, base: str, source: str, session_model: str) -> Endpoint:
        """The key goes only where the user pointed: a flag, the environment, config.toml, or a URL they
        confirmed in the app. A URL from a session file or found by scanning gets no key."""
        from tui.client.endpoint import endpoint_for, normalise_base_url
        if normalise_base_url(base) in self.trusted_urls:
            source = "user"
        endpoint = endpoint_for(base, source, self.settings.model or session_model, self.settings.api_key_env)
        endpoint.api = getattr(self.settings, "api", "") or "chat"  # the API the chat speaks there
        return endpoint

    def key_note(self, endpoint: Endpoint) -> str:
        if not endpoint.key_withheld:
            return ""
        return (f" · without ${self.settings.api_key_env}: this URL came from the session, not from you "
                "(palette: 'Send my API key to this endpoint')")

    def trust_target(self, session_url: str) -> str:
        """The URL the user is asked about before the key goes there ('' when there is none)."""
        return self.client.endpoint.base_url if self.client else (self.settings.base_url or session_url)

    def trust(self, base: str) -> None:
        from tui.client.endpoint import normalise_base_url
        self.trusted_urls.add(normalise_base_url(base))

    def trust_question(self, base: str) -> str:
        return (f"Send ${self.settings.api_key_env} to {base}? Only do this if you trust "
                "that server: it will receive your API key with every request.")

    async def server_tokenizer(self, endpoint: Endpoint, template: ChatTemplate,
                               on_change: Callable[[bool], None]) -> FallbackTokenizer:
        """The server's /tokenize, with a local tokenizer standing in (an estimate) while it is away."""
        from tui.client.server_tokenizer import ServerTokenizer
        from tui.context.families.registry import tokenizer_for_family

        from tui.controller.tokenizer_fallback import FallbackTokenizer
        local = await asyncio.to_thread(get_tokenizer, tokenizer_for_family(template.identity.family))
        server = ServerTokenizer(endpoint, set(template.special_strings()))
        return FallbackTokenizer(server, local, on_change)
