"""The bytes of a request body: one serialization for what is sent, copied as curl, exported and compared.

Compact JSON (no spaces), UTF-8, no NaN, with every paste-unsafe character inside a string written as a
`\\uXXXX` escape (the same JSON value: the server reads the same text). Because the body is sent as these
bytes, the curl copy and `export --format request` give exactly what the server received.
"""

from __future__ import annotations

import json
from typing import Any

from tui.context.untrusted.visible import json_paste_safe


def request_text(body: Any) -> str:
    return json_paste_safe(json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False))


def request_bytes(body: Any) -> bytes:
    return request_text(body).encode("utf-8")
