"""The building blocks of the session file's schema (tui/sessions/schema.py): bounds, bounded types, and the
check that a kept-as-dict wire object has the right shape."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from tui.context.messages import ROLES

MAX_TEXT = 32 * 1024 * 1024  # characters in one message, reply or document
MAX_TEMPLATE = 1024 * 1024
MAX_MESSAGES = 100_000
MAX_REQUESTS = 100_000
MAX_BRANCHES = 10_000  # continuations kept besides the one shown
TITLE_LIMIT = 1_000  # a session title's length; a longer one in a file is clipped, said once
TITLE_READ = 100_000  # past this a title is refused with the file (a file that size is not a mistake)
MAX_TOOL_CALLS = 1_000
MAX_PARTS = 10_000
MAX_TOOLS = 1_000
MAX_VARIABLES = 1_000
BIG = 10 ** 12  # token counts and costs
MAX_NEXT_ID = 10 ** 12  # the message id counter (tui.sessions.model.MAX_NEXT_ID)

# Names the engine passes to a template itself: a variable with one of these names would collide.
RESERVED_VARIABLES = frozenset({"messages", "source", "render", "specials", "text", "origin", "name"})


def Str(limit: int) -> Any:  # noqa: N802 - reads as a type in the annotations below
    return Annotated[str, Meta(max_length=limit)]


def Int(low: int, high: int) -> Any:  # noqa: N802
    return Annotated[int, Meta(ge=low, le=high)]


def List(item: Any, limit: int) -> Any:  # noqa: N802
    return Annotated[list[item], Meta(max_length=limit)]


Text = Str(MAX_TEXT)
Id = Str(200)
Name = Str(256)
Label = Str(500)
Note = Str(4000)
PathText = Str(4096)
Time = Str(64)
Key = Str(256)
Wire = Str(4096)  # names and ids a server chose (tool call ids and names, finish reasons): its own bound
Free = dict[Key, Any]  # any JSON object; depth and numbers are bounded by the file-wide pass
VarName = Annotated[str, Meta(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")]
SessionId = Annotated[str, Meta(pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")]  # it names files
Hash = Annotated[str, Meta(pattern=r"^([0-9a-f]{64})?$")]
Role = Literal[ROLES]
Number = Annotated[float, Meta(ge=0, le=1e15)]


def conform(value: Any, shape: Any, where: str) -> None:
    """Check `value` against `shape`; raise ValueError that msgspec turns into a located error."""
    try:
        msgspec.convert(value, shape)
    except msgspec.ValidationError as exc:
        raise ValueError(f"{exc} - at `${where}`") from None
