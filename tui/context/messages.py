"""Messages as the engine sees them: the wire fields plus provenance, which is never sent."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from tui.context.json_types import JSONObject, WireMessage


class Role(StrEnum):
    """The roles a chat template knows (a message's `role` compares equal to these)."""

    SYSTEM = "system"
    DEVELOPER = "developer"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class Source(StrEnum):
    """Who produced a message. Trust follows the source unless the user overrides it."""

    USER = "user"
    SYSTEM_PROMPT = "system_prompt"
    APP = "app"
    MODEL = "model"
    TOOL = "tool"
    DOCUMENT = "document"
    MEMORY = "memory"
    SUBTASK = "subtask"
    PROFILE = "profile"  # what the user curated about themselves (the harness writes it): trusted
    CHANNEL = "channel"  # a message from an outside channel, its sender fields as claimed: untrusted


ROLES = tuple(role.value for role in Role)  # as plain strings: the session schema's Literal is made of them
SOURCES = tuple(source.value for source in Source)
UNTRUSTED_SOURCES = frozenset({Source.TOOL, Source.DOCUMENT, Source.MEMORY, Source.SUBTASK, Source.CHANNEL})
KEY_CHARS = 200  # a provenance key is a name, not a text

IMAGE_PATCH = 28  # pixels per side of one vision patch, the usual estimate


class MessageError(ValueError):
    """A message that cannot be sent as it is (unknown role, wrong content type...)."""


_SOURCE_OF_ROLE: dict[str, Source] = {Role.SYSTEM: Source.SYSTEM_PROMPT, Role.DEVELOPER: Source.SYSTEM_PROMPT,
                                      Role.ASSISTANT: Source.MODEL, Role.TOOL: Source.TOOL}


def default_source(role: str) -> str:
    return _SOURCE_OF_ROLE.get(role, Source.USER).value


@dataclass
class Provenance:
    source: str = "user"
    trusted: bool = True
    label: str = ""  # e.g. "tool:web_fetch", "file:notes.md"
    key: str = ""  # what the message is a version of: a newer message with the same key supersedes it (curated)
    recorded: str = ""  # when a memory was recorded (ISO 8601): its age weighs its relevance (tui/context/trust.py)

    @classmethod
    def for_source(cls, source: str, label: str = "") -> "Provenance":
        if source not in SOURCES:
            raise MessageError(f"unknown provenance source {source!r} (expected one of {', '.join(SOURCES)})")
        return cls(source=source, trusted=source not in UNTRUSTED_SOURCES, label=label)


@dataclass
class Message:
    role: str
    content: Any = ""  # a string, a list of parts, or None (an assistant turn with only tool calls)
    name: str | None = None
    tool_calls: list[JSONObject] | None = None
    tool_call_id: str | None = None
    reasoning_content: str | None = None
    provenance: Provenance = field(default_factory=Provenance)
    pinned: bool = False
    id: str = ""
    incomplete: bool = False  # a reply cut short (stopped, failed, or the app was killed)

    def to_wire(self, local: bool = False) -> WireMessage:
        """The dict sent to a server or a template: wire fields only, never provenance.

        An image part's size, format and file name are ctxpane's own (kept for counting): left out
        unless `local` (the session file keeps them)."""
        content = self.content if local else wire_content(self.content)
        wire: WireMessage = {"role": self.role, "content": content}
        for key in ("name", "tool_calls", "tool_call_id", "reasoning_content"):
            value = getattr(self, key)
            if value is not None:
                wire[key] = value
        return wire

    def text(self) -> str:
        """The message's plain text: string content, or the text parts joined."""
        return content_text(self.content)

    def to_record(self) -> JSONObject:
        record = self.to_wire(local=True)
        record["provenance"] = {"source": self.provenance.source, "trusted": self.provenance.trusted,
                                "label": self.provenance.label}
        for name in ("key", "recorded"):
            if getattr(self.provenance, name):
                record["provenance"][name] = getattr(self.provenance, name)
        if self.pinned:
            record["pinned"] = True
        if self.incomplete:
            record["incomplete"] = True
        if self.id:
            record["id"] = self.id
        return record


def content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if isinstance(part, dict))


IMAGE_TYPES = ("image_url", "image", "input_image")
LOCAL_PART_KEYS = frozenset({"width", "height", "format", "name"})  # on image parts: never sent


def wire_content(content: Any) -> Any:
    """Content as sent: image parts without the keys only ctxpane reads."""
    if not isinstance(content, list) or not image_parts(content):
        return content
    return [{k: v for k, v in part.items() if k not in LOCAL_PART_KEYS}
            if isinstance(part, dict) and part.get("type") in IMAGE_TYPES else part for part in content]


def image_parts(content: Any) -> list[JSONObject]:
    if not isinstance(content, list):
        return []
    return [p for p in content if isinstance(p, dict) and p.get("type") in IMAGE_TYPES]


def image_token_estimate(part: JSONObject) -> int:
    """Vision tokens for one image part, estimated from its size in 28x28 patches (labelled estimate).

    A part may give `width`/`height` (ours, or inside `image_url`); without them 448x448 is assumed.
    """
    url = part.get("image_url")
    inner: JSONObject = url if isinstance(url, dict) else {}
    width = int(part.get("width") or inner.get("width") or 448)
    height = int(part.get("height") or inner.get("height") or 448)
    return max(1, -(-width // IMAGE_PATCH)) * max(1, -(-height // IMAGE_PATCH))


def _check_content(role: str, content: Any) -> None:
    if content is None or isinstance(content, str):
        return
    if not isinstance(content, list):
        raise MessageError(f"{role} message content must be a string or a list of parts, not {type(content).__name__}")
    for part in content:
        if not isinstance(part, dict) or "type" not in part:
            raise MessageError(f"{role} message has a content part without a 'type': {json.dumps(part)[:60]}")


SESSION_FIELDS = ("provenance", "pinned")  # a session's own: where a message came from, never a request's to say


def wire_message(data: Any, index: int, ident: str) -> Message:
    """A message as a request body carries it, with the id given: trusted or untrusted by its role, whatever fields
    of a session's own it carries (a tool result that says it was typed by the user is still a tool result)."""
    if isinstance(data, dict):
        data = {**{key: value for key, value in data.items() if key not in SESSION_FIELDS}, "id": ident}
    return message_from_dict(data, index)


def message_from_dict(data: Any, index: int = 0) -> Message:
    """Build a Message from an OpenAI-style dict, with optional `provenance`, `pinned`, `id` keys."""
    if not isinstance(data, dict):
        raise MessageError(f"message {index} is not an object")
    role = data.get("role")
    if role not in ROLES:
        raise MessageError(f"message {index} has role {role!r}; expected one of {', '.join(ROLES)}")
    content = data.get("content", "")
    _check_content(role, content)
    prov = data.get("provenance")
    if isinstance(prov, dict):
        source = prov.get("source")  # null or missing: the role's default, as in a body without provenance
        provenance = Provenance.for_source(default_source(role) if source is None else source, prov.get("label", ""))
        provenance.key = str(prov.get("key") or "")[:KEY_CHARS]
        provenance.recorded = str(prov.get("recorded") or "")[:KEY_CHARS]
        if "trusted" in prov:
            provenance.trusted = bool(prov["trusted"])
    else:
        provenance = Provenance.for_source(default_source(role))
    reasoning = data.get("reasoning_content", data.get("reasoning", data.get("thinking")))
    return Message(role=role, content=content, name=data.get("name"), tool_calls=data.get("tool_calls"),
                   tool_call_id=data.get("tool_call_id"), reasoning_content=reasoning,
                   provenance=provenance, pinned=bool(data.get("pinned", False)),
                   id=str(data.get("id", "")) or f"m{index}", incomplete=bool(data.get("incomplete", False)))


def messages_from_list(items: Any) -> list[Message]:
    if not isinstance(items, list):
        raise MessageError("messages must be a JSON list")
    return [message_from_dict(item, i) for i, item in enumerate(items)]
