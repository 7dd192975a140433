"""A reply in the Messages or Responses format, whole or as its streamed events, as the chat-completions chunks the
rest of ctxpane reads (content, reasoning, tool calls, finish reason, usage with the cached share, timings).

Pure and lenient: a field of the wrong type is left out here (the chunk schema then checks what is kept); the
usage is carried whole in each chunk, so the last chunk read holds every figure the events gave.
"""

from __future__ import annotations

import json
from typing import Any

from tui.context.formats.kinds import FormatKind


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 10 ** 12 else None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def anthropic_usage(usage: dict[str, Any]) -> dict[str, Any] | None:
    """Anthropic's usage as chat-completions usage: the prompt is input + cache reads + cache writes."""
    fresh, read, written = (_count(usage.get(key)) for key in
                            ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"))
    out_tokens = _count(usage.get("output_tokens"))
    if fresh is None and read is None and written is None and out_tokens is None:
        return None
    prompt = (fresh or 0) + (read or 0) + (written or 0)
    out: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": out_tokens or 0,
                           "total_tokens": prompt + (out_tokens or 0),
                           "prompt_tokens_details": {"cached_tokens": read or 0}}
    if written is not None:
        out["cache_creation_input_tokens"] = written
    return out


def responses_usage(usage: dict[str, Any]) -> dict[str, Any] | None:
    prompt, out_tokens = _count(usage.get("input_tokens")), _count(usage.get("output_tokens"))
    if prompt is None and out_tokens is None:
        return None
    cached = _count(_dict(usage.get("input_tokens_details")).get("cached_tokens"))
    out: dict[str, Any] = {"prompt_tokens": prompt or 0, "completion_tokens": out_tokens or 0,
                           "total_tokens": _count(usage.get("total_tokens")) or (prompt or 0) + (out_tokens or 0)}
    if cached is not None:
        out["prompt_tokens_details"] = {"cached_tokens": cached}
    reasoning = _count(_dict(usage.get("output_tokens_details")).get("reasoning_tokens"))
    if reasoning is not None:
        out["completion_tokens_details"] = {"reasoning_tokens": reasoning}
    return out


FINISH = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length", "tool_use": "tool_calls",
          "pause_turn": "stop", "refusal": "content_filter"}


class Translator:
    """Events of one streamed reply (or one whole reply) in, chat-completions chunks out."""

    def __init__(self, kind: FormatKind) -> None:
        self.kind = kind
        self.done = False  # the reply's own last event came (message_stop, response.completed, …)
        self.response_id = ""  # a Responses reply's id: what a later previous_response_id names
        self.error = ""
        self.usage: dict[str, Any] = {}  # the provider's own usage, merged over the events
        self.model: str | None = None
        self._tools: dict[str, int] = {}  # a block index or an item id -> its tool call's index

    # -- whole replies --------------------------------------------------------------------------------
    def whole(self, data: Any) -> dict[str, Any]:
        data = _dict(data)
        self.done = True
        if self.kind is FormatKind.MESSAGES:
            self.model = _text(data.get("model")) or None
            self.usage = _dict(data.get("usage"))
            text, reasoning = "", ""
            calls: list[dict[str, Any]] = []
            for block in _list(data.get("content")):
                block = _dict(block)
                if block.get("type") == "text":
                    text += _text(block.get("text"))
                elif block.get("type") == "thinking":
                    reasoning += _text(block.get("thinking"))
                elif block.get("type") == "tool_use":
                    calls.append(self._call(len(calls), _text(block.get("id")), _text(block.get("name")),
                                            json.dumps(block.get("input") or {}, ensure_ascii=False)))
            finish = FINISH.get(_text(data.get("stop_reason")), _text(data.get("stop_reason")) or None)
            return self._chunk(text, reasoning, calls, finish, diagnostics=data.get("diagnostics"))
        self._response(data)
        text, reasoning = "", ""
        calls = []
        for item in _list(data.get("output")):
            item = _dict(item)
            if item.get("type") == "message":
                text += "".join(_text(_dict(p).get("text")) for p in _list(item.get("content"))
                                if _dict(p).get("type") == "output_text")
            elif item.get("type") == "reasoning":
                reasoning += "".join(_text(_dict(p).get("text")) for p in _list(item.get("content")) or
                                     _list(item.get("summary")))
            elif item.get("type") == "function_call":
                calls.append(self._call(len(calls), _text(item.get("call_id")), _text(item.get("name")),
                                        _text(item.get("arguments"))))
        return self._chunk(text, reasoning, calls, self._finish(data, bool(calls)), timings=data.get("timings"))

    # -- streamed events ------------------------------------------------------------------------------
    def event(self, name: str, data: Any) -> list[dict[str, Any]]:
        data = _dict(data)
        kind = _text(data.get("type")) or name
        if kind == "error" or kind == "response.failed":
            error = _dict(data.get("error")) or _dict(_dict(data.get("response")).get("error"))
            self.error = (_text(error.get("message")) or json.dumps(data)[:500])[:4000]
            self.done = kind == "response.failed"
            return []
        if self.kind is FormatKind.MESSAGES:
            return self._anthropic(kind, data)
        return self._responses(kind, data)

    def _anthropic(self, kind: str, data: dict[str, Any]) -> list[dict[str, Any]]:
        if kind == "message_start":
            message = _dict(data.get("message"))
            self.model = _text(message.get("model")) or None
            self.usage.update(_dict(message.get("usage")))
            return [self._chunk("", "", [], None, diagnostics=message.get("diagnostics"))]
        if kind == "content_block_start":
            block = _dict(data.get("content_block"))
            if block.get("type") == "tool_use":
                index = self._tools.setdefault(str(data.get("index")), len(self._tools))
                given = block.get("input")
                start = json.dumps(given, ensure_ascii=False) if isinstance(given, dict) and given else ""
                return [self._chunk("", "", [self._call(index, _text(block.get("id")), _text(block.get("name")),
                                                        start)], None)]
            if block.get("type") == "text" and _text(block.get("text")):
                return [self._chunk(_text(block.get("text")), "", [], None)]
            return []
        if kind == "content_block_delta":
            delta = _dict(data.get("delta"))
            if delta.get("type") == "text_delta":
                return [self._chunk(_text(delta.get("text")), "", [], None)]
            if delta.get("type") == "thinking_delta":
                return [self._chunk("", _text(delta.get("thinking")), [], None)]
            if delta.get("type") == "input_json_delta":
                found = self._tools.get(str(data.get("index")))
                if found is not None:
                    return [self._chunk("", "", [{"index": found, "function": {
                        "arguments": _text(delta.get("partial_json"))}}], None)]
            return []
        if kind == "message_delta":
            self.usage.update(_dict(data.get("usage")))
            reason = _text(_dict(data.get("delta")).get("stop_reason"))
            return [self._chunk("", "", [], FINISH.get(reason, reason or None), diagnostics=data.get("diagnostics"))]
        if kind == "message_stop":
            self.done = True
            return [self._chunk("", "", [], None)]
        return []

    def _responses(self, kind: str, data: dict[str, Any]) -> list[dict[str, Any]]:
        if kind in ("response.created", "response.in_progress"):
            self._response(_dict(data.get("response")))
            return []
        if kind == "response.output_item.added":
            item = _dict(data.get("item"))
            if item.get("type") == "function_call":
                key = _text(item.get("id")) or str(data.get("output_index"))
                index = self._tools.setdefault(key, len(self._tools))
                self._tools.setdefault(str(data.get("output_index")), index)
                return [self._chunk("", "", [self._call(index, _text(item.get("call_id")), _text(item.get("name")),
                                                        _text(item.get("arguments")))], None)]
            return []
        if kind == "response.function_call_arguments.delta":
            found = self._tools.get(_text(data.get("item_id"))) if data.get("item_id") else None
            found = found if found is not None else self._tools.get(str(data.get("output_index")))
            if found is None:
                return []
            return [self._chunk("", "", [{"index": found, "function": {"arguments": _text(data.get("delta"))}}], None)]
        if kind == "response.output_text.delta":
            return [self._chunk(_text(data.get("delta")), "", [], None)]
        if kind in ("response.reasoning_text.delta", "response.reasoning_summary_text.delta"):
            return [self._chunk("", _text(data.get("delta")), [], None)]
        if kind in ("response.completed", "response.incomplete"):
            response = _dict(data.get("response"))
            self._response(response)
            self.done = True
            timings = data.get("timings") if isinstance(data.get("timings"), dict) else response.get("timings")
            return [self._chunk("", "", [], self._finish(response, bool(self._tools)), timings=timings)]
        return []

    # -- pieces ---------------------------------------------------------------------------------------
    def _response(self, response: dict[str, Any]) -> None:
        self.response_id = _text(response.get("id"))[:4096] or self.response_id
        self.model = _text(response.get("model")) or self.model
        if isinstance(response.get("usage"), dict):
            self.usage = dict(response["usage"])

    @staticmethod
    def _finish(response: dict[str, Any], calls: bool) -> str | None:
        status = _text(response.get("status"))
        if status == "incomplete":
            reason = _text(_dict(response.get("incomplete_details")).get("reason"))
            return "length" if reason == "max_output_tokens" else (reason or "incomplete")
        if status == "completed":
            return "tool_calls" if calls else "stop"
        return status or None

    @staticmethod
    def _call(index: int, ident: str, name: str, arguments: str) -> dict[str, Any]:
        return {"index": index, "id": ident, "type": "function", "function": {"name": name, "arguments": arguments}}

    def _chunk(self, text: str, reasoning: str, calls: list[dict[str, Any]], finish: str | None,
               timings: Any = None, diagnostics: Any = None) -> dict[str, Any]:
        delta: dict[str, Any] = {}
        if text:
            delta["content"] = text
        if reasoning:
            delta["reasoning_content"] = reasoning
        if calls:
            delta["tool_calls"] = calls
        chunk: dict[str, Any] = {"model": self.model, "choices": [{"delta": delta, "finish_reason": finish}]}
        usage = anthropic_usage(self.usage) if self.kind is FormatKind.MESSAGES else responses_usage(self.usage)
        if usage is not None:
            chunk["usage"] = usage
        if isinstance(timings, dict):
            chunk["timings"] = timings
        if diagnostics is not None:
            chunk["diagnostics"] = diagnostics
        return chunk
