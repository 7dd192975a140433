"""Names for JSON as the engine and the client hold it: decoded from a server's answer, a session file or a body,
or built to be encoded. A JSON object's values are whatever JSON holds (`Any`): code that reads one narrows each
value it uses (isinstance), as it does for any input it did not make."""

from __future__ import annotations

from typing import Any, TypeAlias

JSONObject: TypeAlias = dict[str, Any]
# One chat message as sent to a server or a template (Message.to_wire): `role` and `content`, with `name`,
# `tool_calls`, `tool_call_id` and `reasoning_content` when set; a message given as a dict may hold more.
WireMessage: TypeAlias = dict[str, Any]
