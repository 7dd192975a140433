"""The building blocks of the session file's schema (tui/sessions/schema.py): bounds, bounded types, and the
check that a kept-as-dict wire object has the right shape."""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeAlias, get_args

import msgspec
from msgspec import Meta

from tui.context.messages import ROLES, SOURCES
from tui.context.policy.truncation import POLICIES

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


Text: TypeAlias = Annotated[str, Meta(max_length=MAX_TEXT)]
Id: TypeAlias = Annotated[str, Meta(max_length=200)]
Name: TypeAlias = Annotated[str, Meta(max_length=256)]
Label: TypeAlias = Annotated[str, Meta(max_length=500)]
Note: TypeAlias = Annotated[str, Meta(max_length=4000)]
PathText: TypeAlias = Annotated[str, Meta(max_length=4096)]
Time: TypeAlias = Annotated[str, Meta(max_length=64)]
Key: TypeAlias = Annotated[str, Meta(max_length=256)]
# names and ids a server chose (tool call ids and names, finish reasons): its own bound
Wire: TypeAlias = Annotated[str, Meta(max_length=4096)]
Free: TypeAlias = dict[Key, Any]  # any JSON object; depth and numbers are bounded by the file-wide pass
VarName: TypeAlias = Annotated[str, Meta(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")]
SessionId: TypeAlias = Annotated[str, Meta(pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")]  # it names files
Hash: TypeAlias = Annotated[str, Meta(pattern=r"^([0-9a-f]{64})?$")]
ModelName: TypeAlias = Annotated[str, Meta(max_length=1000)]
Count: TypeAlias = Annotated[int, Meta(ge=0, le=BIG)]  # tokens, of a request or a reply
SignedCount: TypeAlias = Annotated[int, Meta(ge=-BIG, le=BIG)]  # a difference of two counts
WindowSize: TypeAlias = Annotated[int, Meta(ge=1, le=10 ** 8)]  # a server's context window, in tokens
RequestCount: TypeAlias = Annotated[int, Meta(ge=0, le=MAX_REQUESTS)]
# The engine's names, spelled out so a type checker reads them as literals; checked against the engine below.
Role: TypeAlias = Literal["system", "developer", "user", "assistant", "tool"]
SourceName: TypeAlias = Literal["user", "system_prompt", "app", "model", "tool", "document", "memory", "subtask",
                                "profile", "channel"]
PolicyName: TypeAlias = Literal["keep-all", "drop-oldest", "keep-last-n", "summarise", "curated"]
Number: TypeAlias = Annotated[float, Meta(ge=0, le=1e15)]


def _same_names(literal: Any, names: tuple[str, ...], what: str) -> None:
    if get_args(literal) != names:
        raise RuntimeError(f"the session schema's {what} are not the engine's: {get_args(literal)} != {names}")


_same_names(Role, ROLES, "roles")
_same_names(SourceName, SOURCES, "message sources")
_same_names(PolicyName, POLICIES, "policies")


def conform(value: Any, shape: Any, where: str) -> None:
    """Check `value` against `shape`; raise ValueError that msgspec turns into a located error."""
    try:
        msgspec.convert(value, shape)
    except msgspec.ValidationError as exc:
        raise ValueError(f"{exc} - at `${where}`") from None
