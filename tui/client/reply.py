"""A reply assembled from streamed deltas (or taken whole from a non-streamed response)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Reply:
    content: str = ""
    reasoning: str = ""
    tool_calls: list[dict] = field(default_factory=list)
    finish_reason: str | None = None
    usage: dict | None = None
    timings: dict | None = None
    model: str | None = None
    incomplete: bool = False
    error: str | None = None

    @property
    def cached_tokens(self) -> int | None:
        """Prompt tokens the server reused from its cache, as it reports them."""
        details = (self.usage or {}).get("prompt_tokens_details") or {}
        if details.get("cached_tokens") is not None:
            return int(details["cached_tokens"])
        if self.timings and self.timings.get("cache_n") is not None:
            return int(self.timings["cache_n"])
        return None

    @property
    def prompt_tokens(self) -> int | None:
        value = (self.usage or {}).get("prompt_tokens")
        return None if value is None else int(value)

    def to_message(self) -> dict:
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = self.tool_calls
        if self.reasoning:
            message["reasoning_content"] = self.reasoning
        return message

    def to_record(self) -> dict:
        return {"content": self.content, "reasoning": self.reasoning, "tool_calls": self.tool_calls,
                "finish_reason": self.finish_reason, "usage": self.usage, "timings": self.timings,
                "model": self.model, "incomplete": self.incomplete, "error": self.error}

    @classmethod
    def from_record(cls, data: dict) -> "Reply":
        known = {k: data.get(k) for k in ("content", "reasoning", "finish_reason", "usage", "timings", "model",
                                          "error")}
        return cls(**{k: v for k, v in known.items() if v is not None}, tool_calls=list(data.get("tool_calls") or []),
                   incomplete=bool(data.get("incomplete", False)))


class ReplyAssembler:
    """Applies chat.completion.chunk objects in order; tool calls are joined by their index."""

    def __init__(self) -> None:
        self.reply = Reply()
        self._calls: dict[int, dict] = {}

    def apply(self, chunk: dict) -> str:
        """Apply one chunk; returns the new content text it carried (for display)."""
        self.reply.model = chunk.get("model") or self.reply.model
        if chunk.get("usage"):
            self.reply.usage = chunk["usage"]
        if chunk.get("timings"):
            self.reply.timings = chunk["timings"]
        added = ""
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or choice.get("message") or {}
            if delta.get("content"):
                added += delta["content"]
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if reasoning:
                self.reply.reasoning += reasoning
            for call in delta.get("tool_calls") or []:
                self._merge_call(call)
            if choice.get("finish_reason"):
                self.reply.finish_reason = choice["finish_reason"]
        self.reply.content += added
        self.reply.tool_calls = [self._calls[i] for i in sorted(self._calls)]
        return added

    def _merge_call(self, call: dict) -> None:
        index = call.get("index", len(self._calls))
        slot = self._calls.setdefault(index, {"id": "", "type": "function",
                                              "function": {"name": "", "arguments": ""}})
        if call.get("id"):
            slot["id"] = call["id"]
        if call.get("type"):
            slot["type"] = call["type"]
        function = call.get("function") or {}
        if function.get("name"):
            slot["function"]["name"] += function["name"]
        if function.get("arguments"):
            slot["function"]["arguments"] += function["arguments"]


def reply_from_response(data: dict) -> Reply:
    assembler = ReplyAssembler()
    assembler.apply(data)
    return assembler.reply
