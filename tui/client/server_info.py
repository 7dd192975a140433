"""What a server knows about itself: its kind, model, context size, template and tokenizer.

llama.cpp (`/props`, `/tokenize`, `/apply-template`), vLLM (`/version`, `/tokenize` with messages),
Ollama (`/api/show`: a Go template, not Jinja), LM Studio (`/api/v0/models`), and hosted APIs that
offer none of this (the engine then falls back to a built-in template and tiktoken, as estimates).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Awaitable

from tui.context.families.registry import context_window
from tui.context.fit.window import WindowSize, choose_window

from tui.client.errors import ClientError, MalformedAnswer, NotJSON, ServerFailed, TooLarge
from tui.client.gateway import Upstream, auth_problem, is_litellm, probe_litellm
from tui.client.http import OpenAIClient
from tui.client.schemas import LMStudioModels, ModelList, OllamaPs, OllamaShow, Props, Version, context_size, convert

HOSTED = {"api.openai.com": "openai", "openrouter.ai": "openrouter", "api.together.xyz": "together",
          "api.groq.com": "groq", "api.mistral.ai": "mistral", "api.deepseek.com": "deepseek",
          "api.anthropic.com": "anthropic", "generativelanguage.googleapis.com": "gemini"}


@dataclass
class ServerInfo:
    kind: str = "openai-compatible"
    models: list[str] = field(default_factory=list)
    model: str = ""
    n_ctx: int | None = None
    chat_template: str | None = None
    template_language: str = "jinja"  # "go" for Ollama
    bos_token: str | None = None
    eos_token: str | None = None
    can_tokenize: bool = False
    can_apply_template: bool = False
    build: str = ""
    notes: list[str] = field(default_factory=list)
    windows: list[WindowSize] = field(default_factory=list)  # every window figure found, with its source
    gateway: str = ""  # "LiteLLM" when a gateway stands in front of the server (its template etc. hidden)
    upstream: Upstream = field(default_factory=Upstream)  # what the gateway says it forwards to
    vision: bool | None = None  # the server takes images (llama.cpp's /props modalities); None: not said

    @property
    def has_own_template(self) -> bool:
        return bool(self.chat_template) and self.template_language == "jinja"

    @property
    def window(self) -> WindowSize | None:
        """The window to plan with: the most trusted figure found (tui/context/fit/window.py)."""
        return choose_window(self.windows)

    def found_window(self, tokens: int | None, source: str, detail: str) -> None:
        if tokens:
            self.windows.append(WindowSize(tokens, source, detail))
            chosen = self.window
            self.n_ctx = chosen.tokens if chosen else None


def hosted_context(model: str) -> int | None:
    """A hosted model's context window when the server does not say: the model registry's hint."""
    return context_window(model)


async def _try(call: Awaitable[Any]) -> Any:
    """The answer of an optional probe, or None when this server does not offer it.

    An endpoint that is missing, refuses or answers with something that is not JSON (a web page)
    means "not this kind of server". One that answers JSON of the wrong shape, or too much of it,
    is a broken server: that error goes to the user.
    """
    try:
        return await call
    except NotJSON:
        return None
    except (MalformedAnswer, TooLarge):
        raise
    except ClientError:
        return None


def _claims(answer: Any, *keys: str) -> bool:
    """True when an answer is an object with one of `keys`: the server says it is of that kind."""
    return isinstance(answer, dict) and any(key in answer for key in keys)


def hosted_kind(host: str) -> str:
    """The hosted API a host name belongs to ("openai", "openrouter", …), else "openai-compatible"."""
    host = host.lower()
    return next((kind for suffix, kind in HOSTED.items() if host.endswith(suffix)), "openai-compatible")


async def probe(client: OpenAIClient, model: str = "") -> ServerInfo:
    """Ask the server what it is. Raises ClientError if /v1/models cannot be had, or an answer is malformed."""
    info = ServerInfo()
    info.kind = hosted_kind(client.endpoint.host.split(":")[0])
    listing = await _models(client)
    info.models = [entry.id for entry in listing.data]
    info.model = model or client.endpoint.model or (info.models[0] if info.models else "")
    if info.kind != "openai-compatible":
        info.found_window(hosted_context(info.model), "model", "ctxpane's model registry")
        info.notes.append(f"{info.kind} offers no template or tokenizer: counts are estimates")
        return info
    for entry in listing.data:
        if entry.id != info.model and len(listing.data) > 1:
            continue
        meta = entry.meta
        info.found_window(meta.n_ctx if meta else None, "server", "/v1/models meta.n_ctx")
        info.found_window(meta.n_ctx_train if meta else None, "model", "/v1/models meta.n_ctx_train")
        info.found_window(entry.max_model_len, "server", "/v1/models max_model_len")
    if await probe_litellm(client, info) or await _probe_llamacpp(client, info) or await _probe_vllm(client, info) \
            or await _probe_ollama(client, info) or await _probe_lmstudio(client, info):
        return info
    info.notes.append("unknown server kind: using a built-in template and tiktoken (estimates)")
    return info


async def _models(client: OpenAIClient) -> ModelList:
    """/v1/models, with the key. A failure that means "send a key" (LiteLLM answers 500 without one) says so."""
    try:
        return await client.get_json("/models", shape=ModelList)
    except ClientError as exc:
        endpoint = client.endpoint
        gateway = isinstance(exc, ServerFailed) and not endpoint.has_key and await is_litellm(client)
        problem = auth_problem(exc, endpoint, gateway)
        if problem is not None and problem is not exc:
            raise problem from None
        if isinstance(exc, ServerFailed) and not endpoint.has_key:
            exc.message = f"{exc.message} (no key was sent: if this server needs one, set ${endpoint.key_env})"
            exc.args = (exc.message,)
        raise


async def _probe_llamacpp(client: OpenAIClient, info: ServerInfo) -> bool:
    answer = await _try(client.get_json("/props", at_root=True))
    if not _claims(answer, "chat_template", "build_info"):
        return False
    props = convert(answer, Props, "the server's /props")
    info.kind = "llama.cpp"
    info.chat_template = props.chat_template or None
    info.bos_token, info.eos_token = props.bos_token, props.eos_token
    info.build = props.build_info or ""
    info.vision = props.modalities.vision if props.modalities is not None else None
    settings = props.default_generation_settings
    info.windows = [w for w in info.windows if w.source != "server"]  # /props is the slot's own figure
    info.found_window(settings.n_ctx if settings else None, "server", "/props default_generation_settings.n_ctx")
    if not (settings and settings.n_ctx):
        info.found_window(props.n_ctx, "server", "/props n_ctx")
    info.can_tokenize = info.can_apply_template = True
    return True


async def _probe_vllm(client: OpenAIClient, info: ServerInfo) -> bool:
    answer = await _try(client.get_json("/version", at_root=True))
    if not _claims(answer, "version"):
        return False
    info.kind, info.build = "vllm", convert(answer, Version, "the server's /version").version
    info.can_tokenize = True  # /tokenize accepts `messages` and applies the server's own template
    info.notes.append("vLLM: the server's rendering is compared through /tokenize with messages")
    return True


async def _probe_ollama(client: OpenAIClient, info: ServerInfo) -> bool:
    answer = await _try(client.get_json("/api/version", at_root=True))
    if not _claims(answer, "version"):
        return False
    info.kind, info.build = "ollama", convert(answer, Version, "the server's /api/version").version
    shown = await _try(client.post_json("/api/show", {"model": info.model}, at_root=True))
    if isinstance(shown, dict):
        show = convert(shown, OllamaShow, "the server's /api/show")
        info.chat_template = show.template
        info.template_language = "go"
        for key, value in (show.model_info or {}).items():
            if key.endswith(".context_length"):
                info.found_window(context_size(value, f"the server's /api/show model_info.{key}"), "model",
                                  f"/api/show model_info.{key} (what the model supports; Ollama runs it "
                                  "with its own num_ctx, often far smaller)")
        info.notes.append("Ollama's template is a Go template, not Jinja: shown as text, rendered with a "
                          "built-in Jinja template instead (an estimate)")
    running = await _try(client.get_json("/api/ps", at_root=True))
    if isinstance(running, dict):
        for entry in convert(running, OllamaPs, "the server's /api/ps").models:
            if info.model in (entry.name, entry.model):
                info.found_window(entry.context_length, "server", "/api/ps context_length (num_ctx of the "
                                                                  "loaded model)")
    return True


async def _probe_lmstudio(client: OpenAIClient, info: ServerInfo) -> bool:
    answer = await _try(client.get_json("/api/v0/models", at_root=True))
    if not (_claims(answer, "data") and isinstance(answer["data"], list)):
        return False
    listing = convert(answer, LMStudioModels, "the server's /api/v0/models")
    info.kind = "lmstudio"
    for entry in listing.data:
        if entry.id == info.model:
            info.found_window(entry.loaded_context_length, "server", "/api/v0/models loaded_context_length")
            info.found_window(entry.max_context_length, "model", "/api/v0/models max_context_length")
    info.notes.append("LM Studio exposes no template or tokenizer: counts are estimates")
    return True
