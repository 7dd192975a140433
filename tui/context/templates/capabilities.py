"""What a chat template can read, found as llama.cpp's server finds it: by rendering probes.

The server hands a template text parts as parts only when the template reads content parts (it iterates or
indexes them), and tool-call arguments as parsed JSON only when the template writes arguments given that way;
otherwise parts are joined into one text and arguments stay the text the client sent (llama_wire.py). Checked
against the capabilities the real server reports in /props (`chat_template_caps`) for the 48 real templates of
../shared/data (docs/normalisation.md): GLM-4.6, Kimi-K2, MiniMax-M2, Mistral Small 3.2, Qwen3.5, Gemma 4 and
others read parts; DeepSeek-R1's distills and V3.1 take arguments as text only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tui.context.templates.library import ChatTemplate

NEEDLE = "ctxpane-probe-7a1f"  # text no template writes of its own


@dataclass(frozen=True)
class Capabilities:
    typed_content: bool = False  # the template reads a message's content parts
    object_arguments: bool = True  # the template writes tool-call arguments given as an object


class _Part(dict[str, Any]):
    """A content part that notes whether the template read a field of it (printing the list whole, or writing it
    as JSON, does not): what tells a template that reads parts from one that writes whatever it is given."""

    read = False  # set on the instance: probes in other threads have parts of their own

    def __getitem__(self, key: str) -> Any:
        self.read = True
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        self.read = True
        return super().get(key, default)


def capabilities(template: ChatTemplate) -> Capabilities:
    """The template's capabilities (a template without Jinja text, harmony's encoder, has the defaults)."""
    if template.source is None:
        return Capabilities()
    key = template.identity.digest or template.source
    if key not in _FOUND:
        if len(_FOUND) >= 64:
            _FOUND.clear()
        variables = {"bos_token": "", "eos_token": "", **template.defaults}  # what the server always passes
        _FOUND[key] = Capabilities(_reads_parts(template.source, variables),
                                   _writes_object_arguments(template.source, variables))
    return _FOUND[key]


_FOUND: dict[str, Capabilities] = {}


def _reads_parts(source: str, variables: dict[str, Any]) -> bool:
    part = _Part(type="text", text=NEEDLE)
    shown = _render(source, [{"role": "user", "content": [part]}], variables)
    return shown is not None and NEEDLE in shown and part.read


CALL_ID = "call00001"  # nine letters and digits: what Mistral's templates require of an id


def _writes_object_arguments(source: str, variables: dict[str, Any]) -> bool:
    """Whether a tool call's arguments given as an object reach the text, in any of a few short conversations
    (templates differ in what they accept around a call: a result after it, a user turn after that)."""
    call = {"id": CALL_ID, "type": "function", "function": {"name": "probe", "arguments": {"text": NEEDLE}}}
    calling: list[dict[str, Any]] = [{"role": "user", "content": "Go"},
                                     {"role": "assistant", "content": "", "tool_calls": [call]}]
    result: dict[str, Any] = {"role": "tool", "tool_call_id": CALL_ID, "content": "done"}
    for messages in ([*calling, result, {"role": "user", "content": "Thanks"}], [*calling, result], calling):
        shown = _render(source, messages, variables)
        if shown is not None and NEEDLE in shown:
            return True
    return False


def _render(source: str, messages: list[dict[str, Any]], variables: dict[str, Any]) -> str | None:
    """The template's text for `messages` as given (no copy to plain JSON: the probe list must stay itself), or
    None when the template refuses them or fails."""
    from tui.context.templates.hf_render import compile_template
    from tui.context.templates.limits import DEFAULT_LIMITS, run_limited

    tools = [{"type": "function", "function": {"name": "probe", "description": "",
                                               "parameters": {"type": "object", "properties": {}}}}]

    def go() -> str:
        return compile_template(source).render(**{**variables, "messages": messages, "tools": tools,
                                                  "documents": None, "add_generation_prompt": True})
    try:
        return run_limited(DEFAULT_LIMITS, go)
    except Exception:  # noqa: BLE001 - a template that refuses the probe cannot read it
        return None
