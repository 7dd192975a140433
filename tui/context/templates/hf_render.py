"""Render Hugging Face chat templates the way `transformers` does, in a sandbox.

The environment mirrors `apply_chat_template(..., tokenize=False)` of transformers 5.x:
an immutable sandbox with trim/lstrip blocks, loop controls and the `generation` tag,
HF's own `tojson`, `raise_exception`, `strftime_now`, and the 5.x message clean-up.
Templates come from servers, GGUF and session files, so they are untrusted code: they run in a
sandbox that bounds what they build (template_sandbox.py) under a deadline and a memory ceiling
(render_limits.py), and every limit reached is a TemplateLimitError, never a hang or a crash.
"""

from __future__ import annotations

import json
from datetime import datetime
from functools import lru_cache
from typing import Any

import jinja2
from jinja2 import nodes
from jinja2.exceptions import TemplateError
from jinja2.ext import Extension, loopcontrols
from jinja2.utils import Namespace

from tui.context.errors import TemplateLimitError, TemplateRenderError
from tui.context.json_types import WireMessage
from tui.context.templates.limits import DEFAULT_LIMITS, RenderLimits, current, run_limited
from tui.context.templates.sandbox import LimitedSandbox

REASONING_KEYS = ("reasoning_content", "thinking", "reasoning")


class GenerationTag(Extension):
    """`{% generation %}...{% endgeneration %}` renders its body unchanged (HF's AssistantTracker)."""

    tags = {"generation"}

    def parse(self, parser: jinja2.parser.Parser) -> nodes.Node:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.Scope(body, lineno=lineno)


class SafeNamespace(Namespace):
    """`namespace()` that, like HF 5.x, refuses attribute names starting with an underscore."""

    def __setitem__(self, name: str, value: Any) -> None:
        if str(name).startswith("_"):
            raise jinja2.exceptions.SecurityError(f"namespace attribute {name!r} is not allowed")
        super().__setitem__(name, value)


class DictFactory:
    """`dict(...)` and `dict.fromkeys(...)` inside templates, without exposing the type itself."""

    def __call__(self, *args: Any, **kwargs: Any) -> dict[Any, Any]:
        return dict(*args, **kwargs)

    def fromkeys(self, keys: Any, value: Any = None) -> dict[Any, Any]:
        return dict.fromkeys(keys, value)


def hf_tojson(value: Any, ensure_ascii: bool = False, indent: Any = None,
              separators: Any = None, sort_keys: bool = False) -> str:
    # HF's tojson is plain json.dumps: no HTML escaping, keys in their own order.
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent,
                      separators=separators, sort_keys=sort_keys)


def raise_exception(message: str) -> None:
    raise TemplateError(message)


def strftime_now(fmt: str) -> str:
    current().check_chars(len(str(fmt)) * 16)  # no directive writes more than 16 characters per character
    return datetime.now().strftime(fmt)


def compile_template(source: str) -> jinja2.Template:
    """Compile once per distinct source; compiling is far slower than rendering."""
    budget = current()
    budget.compiling = True  # constants folded into the generated code stay small
    try:
        return compile_cached(source)
    finally:
        budget.compiling = False


@lru_cache(maxsize=64)
def compile_cached(source: str) -> jinja2.Template:
    env = LimitedSandbox(
        {"tojson": hf_tojson}, trim_blocks=True, lstrip_blocks=True, extensions=[GenerationTag, loopcontrols]
    )
    env.globals.update(
        raise_exception=raise_exception,
        strftime_now=strftime_now,
        namespace=SafeNamespace,
        dict=DictFactory(),
    )
    try:
        return env.from_string(source)
    except TemplateError as exc:
        raise TemplateRenderError(type(exc).__name__, str(exc)) from None


def to_plain_json(value: Any) -> Any:
    """Inputs reach the template as plain JSON types, as in HF 5.x (a callable becomes a string)."""
    return json.loads(json.dumps(value, default=lambda obj: f"<{type(obj).__name__}>"
                                 if not callable(obj) else "<function>"))


def normalise_message(message: WireMessage) -> WireMessage:
    """HF 5.x: drop keys whose value is None; alias the reasoning keys to each other."""
    clean = {key: value for key, value in message.items() if value is not None}
    reasoning = next((clean[key] for key in REASONING_KEYS if key in clean), None)
    if reasoning is not None:
        clean.setdefault("reasoning_content", reasoning)
        clean.setdefault("thinking", reasoning)
    return clean


def render_template(source: str, messages: list[WireMessage], **variables: Any) -> str:
    """Render `messages` with a chat template exactly as transformers' apply_chat_template would.

    Variables default to `tools=None`, `documents=None`, `add_generation_prompt=False`;
    anything passed (bos_token, enable_thinking, ...) overrides them. Runs under DEFAULT_LIMITS.
    Raises TemplateRenderError when the template rejects the conversation or fails.
    """
    return render_limited(source, messages, variables)


def render_limited(source: str, messages: list[WireMessage], variables: dict[str, Any],
                   limits: RenderLimits = DEFAULT_LIMITS) -> str:
    """render_template under explicit limits (the variables come as a dict, so none can pose as a limit).

    Raises TemplateLimitError (a TemplateRenderError; kind TimeLimit, MemoryLimit, SizeLimit or
    RecursionLimit) when the template reaches one; the calling thread stays usable.
    """
    if len(source) > limits.max_source:
        raise TemplateLimitError("SizeLimit", f"the template is longer than {limits.max_source:,} characters")
    return run_limited(limits, lambda: render_checked(source, messages, variables))


def render_checked(source: str, messages: list[WireMessage], variables: dict[str, Any]) -> str:
    template = compile_template(source)
    context: dict[str, Any] = {"tools": None, "documents": None, "add_generation_prompt": False}
    context.update(to_plain_json(variables))
    context["messages"] = [normalise_message(m) for m in to_plain_json(list(messages))]
    try:
        return template.render(**context)
    except TemplateError as exc:
        raise render_error(exc) from None
    except (TypeError, ValueError, KeyError, IndexError, AttributeError,
            ZeroDivisionError, OverflowError) as exc:
        raise render_error(exc) from None


def render_error(exc: Exception) -> TemplateRenderError:
    message = str(exc)  # a template's own message can be as long as it likes: keep what a screen can show
    return TemplateRenderError(type(exc).__name__, message if len(message) <= 2000 else message[:2000] + "…")
