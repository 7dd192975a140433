"""Typed client errors, each with a message a person can act on. None carries the API key."""

from __future__ import annotations

from typing import Any


class ClientError(Exception):
    """Base of every error the client raises. `partial` holds whatever reply had arrived."""

    kind = "error"

    def __init__(self, message: str, partial: Any = None, status: int | None = None):
        super().__init__(message)
        self.message = message
        self.partial = partial
        self.status = status

    def __str__(self) -> str:
        return self.message


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

    def __init__(self, message: str, partial: Any = None, status: int | None = 400, body: dict | None = None):
        super().__init__(message, partial, status)
        self.body = body or {}


class ContextOverflow(BadRequest):
    kind = "context_overflow"

    def __init__(self, message: str, n_prompt_tokens: int | None, n_ctx: int | None, body: dict | None = None):
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


class MalformedChunk(ClientError):
    kind = "malformed_chunk"


class StreamIncomplete(ClientError):
    """The stream ended (cleanly or not) before `[DONE]`."""

    kind = "stream_incomplete"


class StreamErrorEvent(ClientError):
    """The server sent `event: error` (or a chunk with an `error` object) in the stream."""

    kind = "stream_error"


class Cancelled(ClientError):
    kind = "cancelled"
