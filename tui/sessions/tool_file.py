"""A tool file: the tool definitions a user loads (`--tools FILE`, the palette's "Load tools…").

Either a list of entries or {"tools": [...]}. Each entry is an OpenAI function tool plus two fields of
ctxpane's own, never sent: `risky` (the isolated reviewer judges a call before it may run) and `command`
(argv, run without a shell, the call's arguments on stdin; no command means answer by hand or refuse).
An unknown field is an error, not ignored: a misspelt `risky` must not make a tool safe.

    [{"type": "function", "function": {"name": "delete_file", "description": "...", "parameters": {...}},
      "risky": true, "command": ["python3", "tools/delete_file.py"]}]
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal, TypeAlias

import msgspec
from msgspec import Meta, Struct

from tui.context.tools.definitions import ToolSet, ToolSpec, tool_set
from tui.sessions.model import SessionFormatError
from tui.sessions.parse import convert, json_value
from tui.sessions.safe_io import SessionFileError, about, read_regular_file
from tui.sessions.schema_types import MAX_TOOLS, Free, Text

TOOL_FILE_BYTES = 4 * 1024 * 1024
Argument: TypeAlias = Annotated[str, Meta(min_length=0, max_length=4096)]
MAX_ARGUMENTS = 64


class ToolFileError(ValueError):
    """A tool file that cannot be used; one line."""


class FunctionIn(Struct, forbid_unknown_fields=True):
    name: Annotated[str, Meta(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")]
    description: Text | None = None
    parameters: Free | None = None
    strict: bool | None = None


class ToolEntryIn(Struct, forbid_unknown_fields=True):
    function: FunctionIn
    type: Literal["function"] = "function"
    risky: bool = False
    command: Annotated[list[Argument], Meta(min_length=1, max_length=MAX_ARGUMENTS)] | None = None


class ToolFileIn(Struct, forbid_unknown_fields=True):
    tools: Annotated[list[ToolEntryIn], Meta(max_length=MAX_TOOLS)]


def _spec(entry: ToolEntryIn, index: int) -> ToolSpec:
    command = tuple(entry.command or ())
    if command and not command[0].strip():
        raise ToolFileError(f"tool {index + 1} ({entry.function.name}): the command's program is empty")
    if any("\x00" in part for part in command):
        raise ToolFileError(f"tool {index + 1} ({entry.function.name}): the command holds a NUL character")
    function: dict[str, Any] = {k: v for k, v in msgspec.structs.asdict(entry.function).items() if v is not None}
    return ToolSpec(entry.function.name, {"type": "function", "function": function}, entry.risky, command)


def tools_from_value(data: Any, source: str = "") -> ToolSet:
    """The tool set a decoded tool file describes; raises ToolFileError (one line)."""
    if isinstance(data, list):
        data = {"tools": data}
    if not isinstance(data, dict):
        raise ToolFileError("expected a list of tools or an object with `tools`")
    try:
        parsed: ToolFileIn = convert(data, ToolFileIn, "")
    except SessionFormatError as exc:
        raise ToolFileError(str(exc)) from None
    if not parsed.tools:
        raise ToolFileError("holds no tools")
    specs = [_spec(entry, index) for index, entry in enumerate(parsed.tools)]
    names = [spec.name for spec in specs]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ToolFileError(f"defines {', '.join(twice)[:200]} more than once")
    return tool_set(specs, source)


def read_tool_file(path: Path) -> ToolSet:
    """The tools in `path`; raises ToolFileError with one line naming the file."""
    try:
        data = json_value(read_regular_file(path, TOOL_FILE_BYTES))
        return tools_from_value(data, path.name)
    except (SessionFileError, SessionFormatError, ToolFileError) as exc:
        raise ToolFileError(about(path, str(exc))) from None
