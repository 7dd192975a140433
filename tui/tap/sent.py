"""The request as the client sent it, kept whole for the recording: its method, path and query, and its headers, each
credential masked as a body's is (tui/context/untrusted/redaction.py), so that an export or a replay can send the same
request again with a key of the user's own. Pure helpers of the tap's server and recorder."""

from __future__ import annotations

from typing import Any, Iterable

from tui.context.untrusted.redaction import MASK, Redactor
from tui.tap.hops import is_hop_header

MAX_HEADERS = 200  # headers of one request kept (aiohttp refuses more than 128 fields anyway)
MAX_HEADER_NAME = 256
MAX_HEADER_VALUE = 8192  # aiohttp's own bound on a header line
MAX_PATH = 8192
# Not the client's words to the server but its connection's (the tap writes them itself, as curl does): not kept.
NOT_KEPT = frozenset({"host", "content-length", "connection", "keep-alive", "transfer-encoding", "te", "trailer",
                      "upgrade", "expect", "proxy-connection"})
# Credential headers whose names say nothing of a key to the Redactor's rule, masked all the same (server.py's list)
ALSO_CREDENTIALS = frozenset({"proxy-authorization", "set-cookie", "openai-organization", "openai-project"})


def kept_headers(raw: Iterable[tuple[bytes, bytes]], secrets: Iterable[str]) -> list[list[str]]:
    """The request's headers as they may be recorded: in the client's order and spelling, each credential's whole value
    `***` (Authorization, x-api-key, api-key, cookies, any name or value the Redactor takes for one), any other value
    with the request's known keys masked where they appear; bounded in number and size."""
    redactor = Redactor(secrets)
    kept: list[list[str]] = []
    for name_bytes, value_bytes in raw:
        name = name_bytes.decode("latin-1")[:MAX_HEADER_NAME]
        if name.lower() in NOT_KEPT or is_hop_header(name):  # the taps' hop list is theirs, not the client's
            continue
        value = value_bytes.decode("utf-8", "replace")[:MAX_HEADER_VALUE]
        masked = MASK if name.lower() in ALSO_CREDENTIALS else redactor.value({name: value}, by_name=True)[name]
        kept.append([name, masked if isinstance(masked, str) else MASK])
        if len(kept) == MAX_HEADERS:
            break
    return kept


def sent_record(method: str, path: str, headers: list[list[str]]) -> dict[str, Any]:
    """What the session file keeps of how the request was sent (`sent` in docs/session-format.md)."""
    return {"method": method[:16], "path": path[:MAX_PATH], "headers": [list(pair) for pair in headers]}
