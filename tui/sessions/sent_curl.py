"""A request recorded with how it was sent (a tapped request's `sent`: method, path and query, headers) as the curl
command that sends the same request again: the client's own path and query (`?beta=true`), headers (`anthropic-beta`,
its session id) and body bytes. A credential was recorded as `***`: the key goes in as the user's variable, never
written out; a masked header that cannot be sent again that way is left out, and the command says which."""

from __future__ import annotations

import shlex
from typing import Any

from tui.context.json_types import JSONObject
from tui.context.untrusted.redaction import MASK
from tui.context.untrusted.visible import paste_safe

ARGUMENT_LIMIT = 64 * 1024  # characters of a body passed as one -d argument (one argument may hold 128 KiB)
HEREDOC = "CTXPANE_REQUEST_BODY"
KEY_HEADERS = frozenset({"x-api-key", "api-key"})  # a key alone as the value
# The tap's recording unpacked a compressed body: curl sends the unpacked bytes, so their old label would lie.
# The taps' hop list (tui/tap/hops.py) is theirs, never the client's: sent again, a tap would take it for a loop.
NOT_SENT_AGAIN = frozenset({"content-encoding", "content-length", "host", "x-ctxpane-tap"})


def sent_target(base_url: str, path: str) -> str:
    """Where the tap sent the client's path: as it was when it is under the upstream's own path, else under it."""
    scheme, sep, rest = base_url.rstrip("/").partition("://")
    host, slash, base = rest.partition("/")
    origin, base = f"{scheme}{sep}{host}", (slash + base).rstrip("/")
    path = path if path.startswith("/") else "/" + path
    if not base or path == base or path.startswith((base + "/", base + "?")):
        return origin + path
    return origin + base + path


def sent_curl(base_url: str, sent: JSONObject, data: str, key_env: str) -> str:
    """The curl command of a request recorded with `sent`; `data` is its body as the client sent it."""
    lines, left_out, compressed = [], [], False
    for pair in _pairs(sent.get("headers")):
        name, value = pair
        lower = name.lower()
        if lower in NOT_SENT_AGAIN:
            continue
        compressed |= lower == "accept-encoding"
        if MASK not in value:
            lines.append(f"  -H {shlex.quote(f'{name}: {value}')}")
        elif value == MASK and lower == "authorization":
            lines.append(f"  -H {shlex.quote(f'{name}: Bearer ')}\"${key_env}\"")
        elif value == MASK and lower in KEY_HEADERS:
            lines.append(f"  -H {shlex.quote(f'{name}: ')}\"${key_env}\"")
        else:
            left_out.append(name)
    method = str(sent.get("method") or "POST")
    url = sent_target(base_url, str(sent.get("path") or ""))
    head = "".join(f"{line} \\\n" for line in [
        f"curl --globoff --url {shlex.quote(url)}" + (" --compressed" if compressed else "")
        + ("" if method == "POST" else f" -X {shlex.quote(method)}"), *lines])
    said = (f"# left out, recorded as *** (a credential): {', '.join(sorted(set(left_out)))[:500]}\n"
            if left_out else "")
    if len(data) <= ARGUMENT_LIMIT:
        return paste_safe(f"{said}{head}  --data-binary {shlex.quote(data)}")[0]
    return paste_safe(f"{said}{head}  --data-binary @- <<'{HEREDOC}'\n{data}\n{HEREDOC}")[0]


def _pairs(headers: Any) -> list[tuple[str, str]]:
    if not isinstance(headers, list):
        return []
    return [(str(pair[0]), str(pair[1])) for pair in headers if isinstance(pair, (list, tuple)) and len(pair) == 2]
