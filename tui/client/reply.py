"""A reply assembled from streamed deltas (or taken whole from a non-streamed response).

Chunks arrive already checked against `schemas.Chunk`, so every field here has its type and range.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from tui.context.json_types import JSONObject, WireMessage
from tui.context.fit.usage_checks import checked_figure, recordable_usage

from tui.client.errors import TooLarge
from tui.client.schemas import MAX_TOOL_CALLS, CacheDiagnostics, Chunk, TokenLogprob, ToolCallDelta, plain


@dataclass
class Reply:
    content: str = ""
    reasoning: str = ""
    tool_calls: list[JSONObject] = field(default_factory=list)
    finish_reason: str | None = None
    usage: JSONObject | None = None  # schemas.Usage, plain (or as a session record kept it)
    timings: JSONObject | None = None  # schemas.Timings, plain
    model: str | None = None
    incomplete: bool = False
    error: str | None = None
    truncated: bool | None = None  # llama.cpp says it cut the prompt
    prompt_eval_count: int | None = None  # Ollama's count of prompt tokens processed
    generated: list[str] | None = None  # each generated token's text, when the server sent logprobs
    first_token_ms: int | None = None  # measured here, from sending to the first piece of the reply
    elapsed_ms: int | None = None  # from sending to the end of the reply
    diagnostics: CacheDiagnostics | None = None  # the provider's own word on a cache miss (Anthropic's)
    failure: Exception | None = field(default=None, repr=False, compare=False)  # the error it ended with, not saved

    @property
    def cached_tokens(self) -> int | None:
        """Prompt tokens the server reused from its cache, as it reports them."""
        details = (self.usage or {}).get("prompt_tokens_details") or {}
        if details.get("cached_tokens") is not None:
            return _count(details["cached_tokens"])
        return _count((self.timings or {}).get("cache_n"))

    @property
    def prompt_tokens(self) -> int | None:
        return _count((self.usage or {}).get("prompt_tokens"))

    def to_message(self) -> WireMessage:
        message: WireMessage = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = self.tool_calls
        if self.reasoning:
            message["reasoning_content"] = self.reasoning
        return message

    def to_record(self) -> JSONObject:
        usage, dropped = recordable_usage(self.usage)  # (a lying figure made the whole file unreadable)
        record: JSONObject = {"content": self.content, "reasoning": self.reasoning, "tool_calls": self.tool_calls,
                  "finish_reason": self.finish_reason, "usage": usage, "timings": recordable_usage(self.timings)[0],
                  "model": self.model, "incomplete": self.incomplete, "error": self.error}
        if dropped:
            record["figures_left_out"] = dropped[:50]
        for key in ("truncated", "prompt_eval_count", "diagnostics", "first_token_ms", "elapsed_ms"):  # only when a server said so: older records stay alike
            if getattr(self, key) is not None:
                record[key] = getattr(self, key)
        if self.generated is not None:  # the tokens as generated: what the server's cache holds of the reply
            record["generated"] = list(self.generated)
        return record


def _count(value: object) -> int | None:
    """A token count as the server reported it, when it is one (usage_checks.checked_figure); None else."""
    return checked_figure(value) if isinstance(value, int) and not isinstance(value, bool) else None


class ReplyAssembler:
    """Applies chat.completion.chunk objects in order; tool calls are joined by their index."""

    def __init__(self) -> None:
        self.reply = Reply()
        self.size = 0  # characters received: content, reasoning and tool calls
        self._calls: dict[int, JSONObject] = {}

    def apply(self, chunk: Chunk) -> str:
        """Apply one checked chunk; returns the new content text it carried (for display)."""
        reply = self.reply
        reply.model = chunk.model or reply.model
        if chunk.usage is not None:
            reply.usage = plain(chunk.usage)
        if chunk.timings is not None:
            reply.timings = plain(chunk.timings)
        if chunk.truncated is not None:
            reply.truncated = chunk.truncated
        if chunk.prompt_eval_count is not None:
            reply.prompt_eval_count = chunk.prompt_eval_count
        if chunk.diagnostics is not None:
            reply.diagnostics = chunk.diagnostics
        added = ""
        for choice in chunk.choices or ():
            delta = choice.delta or choice.message
            if delta is not None:
                added += delta.content or ""
                reasoning = delta.reasoning_content or delta.reasoning or ""
                reply.reasoning += reasoning
                self.size += len(reasoning)
                for call in delta.tool_calls or ():
                    self._merge_call(call)
            if choice.logprobs is not None and choice.logprobs.content is not None:
                self._add_tokens(choice.logprobs.content)
            if choice.finish_reason:
                reply.finish_reason = choice.finish_reason
        reply.content += added
        self.size += len(added)
        if self._calls:
            reply.tool_calls = [self._calls[i] for i in sorted(self._calls)]
        return added

    def _add_tokens(self, tokens: list[TokenLogprob]) -> None:
        """The generated tokens' own text: from their bytes (the text can have lost a leading space)."""
        pieces = self.reply.generated if self.reply.generated is not None else []
        for token in tokens:
            piece = bytes(token.bytes).decode("utf-8", "replace") if token.bytes is not None else token.token
            pieces.append(piece)
            self.size += len(piece)
        self.reply.generated = pieces

    def _merge_call(self, call: ToolCallDelta) -> None:
        index = call.index if call.index is not None else len(self._calls)
        if index not in self._calls and len(self._calls) >= MAX_TOOL_CALLS:
            raise TooLarge(f"the reply asks for more than {MAX_TOOL_CALLS} tool calls", self.reply)
        slot = self._calls.setdefault(index, {"id": "", "type": "function",
                                              "function": {"name": "", "arguments": ""}})
        if call.id:
            slot["id"] = call.id
        if call.type:
            slot["type"] = call.type
        if call.function is not None:
            name, arguments = call.function.name or "", call.function.arguments or ""
            slot["function"]["name"] += name
            slot["function"]["arguments"] += arguments
            self.size += len(name) + len(arguments)


def reply_from_response(data: Chunk) -> Reply:
    assembler = ReplyAssembler()
    assembler.apply(data)
    return assembler.reply
