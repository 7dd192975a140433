"""The tools a user loaded: each one's wire definition (what the model is sent), whether it is risky (the
reviewer runs before it may be run) and the command the user set for it (off when empty).

A tool the model calls that no loaded file defines is treated as risky with no command: a session from
elsewhere can name tools, it can never bring a command that runs."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from tui.context.json_types import JSONObject


@dataclass(frozen=True)
class ToolSpec:
    name: str
    wire: JSONObject  # {"type": "function", "function": {...}}: only what the API defines, never ctxpane's fields
    risky: bool = False
    command: tuple[str, ...] = ()  # argv, run without a shell; () means no command: answer by hand or refuse
    known: bool = True  # defined by the loaded tool file (an unknown name gets unknown_tool's rules)


def unknown_tool(name: str) -> ToolSpec:
    return ToolSpec(name, {}, risky=True, command=(), known=False)


@dataclass(frozen=True)
class ToolSet:
    specs: Mapping[str, ToolSpec] = field(default_factory=lambda: MappingProxyType({}))
    source: str = ""  # the file they came from, for the status line

    def spec(self, name: str) -> ToolSpec:
        return self.specs.get(name) or unknown_tool(name)

    def wire(self) -> list[JSONObject]:
        return [spec.wire for spec in self.specs.values()]

    def summary(self) -> str:
        risky = sum(1 for spec in self.specs.values() if spec.risky)
        commands = sum(1 for spec in self.specs.values() if spec.command)
        return (f"{len(self.specs)} tools ({risky} risky, {commands} with a command)"
                + (f" from {self.source}" if self.source else ""))


def tool_set(specs: list[ToolSpec], source: str = "") -> ToolSet:
    return ToolSet(MappingProxyType({spec.name: spec for spec in specs}), source)


def wire_name(definition: object) -> str:
    """The name a stored definition gives its tool: chat's {"function": {"name"}} or a flat {"name"} ("" if none)."""
    if not isinstance(definition, dict):
        return ""
    function = definition.get("function")
    name = function.get("name") if isinstance(function, dict) else definition.get("name")
    return name if isinstance(name, str) else ""


def tools_to_send(loaded: ToolSet, stored: list[JSONObject] | None) -> list[JSONObject] | None:
    """What the model is sent. With a tool file loaded: its definitions, then the session's stored ones for tools it
    does not name (answered by hand: they bring no command). A stored definition never stands in for a loaded one:
    the model would be told one thing of a name whose command does another. With none loaded: the session's own."""
    if not loaded.specs:
        return stored
    others = [definition for definition in stored or [] if wire_name(definition) not in loaded.specs]
    return loaded.wire() + others


def described_differently(loaded: ToolSet, stored: list[JSONObject] | None) -> list[str]:
    """The loaded tools whose definition the session's file stores otherwise, in the file's order, each once."""
    names: list[str] = []
    for definition in stored or []:
        name = wire_name(definition)
        spec = loaded.specs.get(name)
        if spec is not None and definition != spec.wire and name not in names:
            names.append(name)
    return names
