"""Typed client errors, each with a message a person can act on. None carries the API key.

A message quotes the server at most in part: it is cut to MAX_MESSAGE characters and its control
and direction characters are shown as visible stand-ins (it is still plain text: the screen must
not parse markup in it). The client scrubs the key from every error before it leaves.
"""

from __future__ import annotations

from typing import Any, Callable

from tui.context.json_types import JSONObject
from tui.context.untrusted.visible import visible

MAX_MESSAGE = 2000  # characters of an error message; server text inside it is cut shorter


def bounded(text: str, limit: int = MAX_MESSAGE) -> str:
    """`text` made visible and cut to `limit` characters, saying so when cut."""
    text = visible(str(text))
    return text if len(text) <= limit else text[: limit - 1] + "…"


class ClientError(Exception):
    """Base of every error the client raises. `partial` holds whatever reply had arrived."""

    kind = "error"

    def __init__(self, message: str, partial: Any = None, status: int | None = None):
        message = bounded(message)
        super().__init__(message)
        self.message = message
        self.partial = partial
        self.status = status

    def __str__(self) -> str:
        return self.message

    def scrub(self, redact: Callable[[str], str]) -> "ClientError":
        """Remove the key from the message and from any server body kept with the error."""
        self.message = redact(self.message)
        self.args = (self.message,)
        body = getattr(self, "body", None)
        if body:
            self.body = _each_string(body, redact)  # on the decoded values: a key made of JSON syntax breaks nothing
        return self


def _each_string(value: Any, change: Callable[[str], str]) -> Any:
    if isinstance(value, dict):
        return {key: _each_string(item, change) for key, item in value.items()}
    if isinstance(value, list):
        return [_each_string(item, change) for item in value]
    return change(value) if isinstance(value, str) else value


class ConnectionFailed(ClientError):
    kind = "connection_refused"


class NameNotResolved(ClientError):
    kind = "name_not_resolved"


class ConnectTimedOut(ClientError):
    kind = "connect_timeout"


class ReadTimedOut(ClientError):
    kind = "read_timeout"


class TLSFailed(ClientError):
    kind = "tls"


class AuthFailed(ClientError):
    kind = "auth"


class NotFound(ClientError):
    kind = "not_found"


class BadRequest(ClientError):
    kind = "bad_request"

    def __init__(self, message: str, partial: Any = None, status: int | None = 400, body: JSONObject | None = None):
        super().__init__(message, partial, status)
        self.body = body or {}


class ContextOverflow(BadRequest):
    kind = "context_overflow"

    def __init__(self, message: str, n_prompt_tokens: int | None, n_ctx: int | None, body: JSONObject | None = None):
        super().__init__(message, None, 400, body)
        self.n_prompt_tokens = n_prompt_tokens
        self.n_ctx = n_ctx


class RateLimited(ClientError):
    kind = "rate_limited"

    def __init__(self, message: str, retry_after: float | None, status: int, partial: Any = None):
        super().__init__(message, partial, status)
        self.retry_after = retry_after


class ServerFailed(ClientError):
    kind = "server_error"


class MalformedAnswer(ClientError):
    """The server answered, but not in the shape expected (a field of the wrong type or out of range)."""

    kind = "malformed_answer"


class NotJSON(MalformedAnswer):
    """The answer is not JSON at all (or nested too deeply to read)."""

    kind = "not_json"


class MalformedChunk(MalformedAnswer):
    """A chunk of a streamed reply that is not JSON or has the wrong shape."""

    kind = "malformed_chunk"


class TooLarge(ClientError):
    """An answer, a stream line or a reply passed its bound; what had arrived is in `partial`."""

    kind = "too_large"


class TokenizerUnavailable(ClientError):
    """The server's tokenizer cannot be used now: count locally (an estimate) and try again later."""

    kind = "tokenizer_unavailable"

    def __init__(self, message: str, retry_at: float | None = None):
        super().__init__(message)
        self.retry_at = retry_at


class StreamIncomplete(ClientError):
    """The stream ended (cleanly or not) before `[DONE]`."""

    kind = "stream_incomplete"


class StreamErrorEvent(ClientError):
    """The server sent `event: error` (or a chunk with an `error` object) in the stream."""

    kind = "stream_error"


class Cancelled(ClientError):
    kind = "cancelled"
