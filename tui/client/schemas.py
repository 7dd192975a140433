"""The shapes of what servers return, typed and bounded (msgspec).

Every answer the client uses is checked here: numbers in range, strings and lists of bounded
length, nesting bounded. A field of the wrong type or out of range becomes a MalformedAnswer (or a
MalformedChunk in a stream) naming the field. Fields the client does not use are ignored, so a
server that adds fields keeps working; a field the client uses may be missing or null.
"""

from __future__ import annotations

from typing import Annotated, Any, Callable, NotRequired, TypedDict, TypeVar

import msgspec
from msgspec import Meta, Struct

from tui.context.json_types import JSONObject

from tui.client.errors import MalformedAnswer, NotJSON

MAX_CONTEXT = 10**8
MAX_COUNT = 10**12  # token counts in usage and timings
MAX_MODELS = 10_000
MAX_CHOICES = 128
MAX_TOOL_CALLS = 128
MAX_TEMPLATE = 1_000_000  # characters of a chat template
MAX_TEXT = 16_000_000  # characters of one content/prompt string
MAX_SLOTS = 4096  # llama.cpp server slots (-np)
MAX_LOGPROBS = 1_000_000  # generated tokens described in one reply or chunk

Context = Annotated[int, Meta(ge=1, le=MAX_CONTEXT)]
Count = Annotated[int, Meta(ge=0, le=MAX_COUNT)]
Measure = Annotated[float, Meta(ge=0, le=1e15)]
ModelId = Annotated[str, Meta(max_length=512)]
Short = Annotated[str, Meta(max_length=4096)]  # versions, build names, finish reasons, ids, token strings
Text = Annotated[str, Meta(max_length=MAX_TEXT)]
Template = Annotated[str, Meta(max_length=MAX_TEMPLATE)]
TokenId = Annotated[int, Meta(ge=0, le=2**32)]
Byte = Annotated[int, Meta(ge=0, le=255)]
T = TypeVar("T")


# -- streamed chunks and whole completions ------------------------------------------------------
class FunctionDelta(Struct):
    name: Text | None = None
    arguments: Text | None = None


class ToolCallDelta(Struct):
    index: Annotated[int, Meta(ge=0, le=MAX_TOOL_CALLS - 1)] | None = None
    id: Short | None = None
    type: Short | None = None
    function: FunctionDelta | None = None


class Delta(Struct):
    content: Text | None = None
    reasoning_content: Text | None = None
    reasoning: Text | None = None
    tool_calls: Annotated[list[ToolCallDelta], Meta(max_length=MAX_TOOL_CALLS)] | None = None


class TokenLogprob(Struct):
    """One generated token as the server describes it (its text, its bytes); probabilities are not used."""

    token: Short = ""
    bytes: Annotated[list[Byte], Meta(max_length=1024)] | None = None


class Logprobs(Struct):
    content: Annotated[list[TokenLogprob], Meta(max_length=MAX_LOGPROBS)] | None = None


class Choice(Struct):
    delta: Delta | None = None
    message: Delta | None = None
    finish_reason: Short | None = None
    logprobs: Logprobs | None = None


def raw_figure(value: Any) -> int | float | str | None:
    """A usage figure kept as the server gave it when it is a number (tui/context/fit/usage_checks.py checks its
    bounds, and says why one is not used); anything else is kept as its type's name, never the value itself."""
    if value is None or isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    return f"<{type(value).__name__}>"


class PromptDetails(Struct, omit_defaults=True):
    cached_tokens: Any = None  # usage figures: read raw, checked where they enter the engine (client/figures.py)
    cache_write_tokens: Any = None  # OpenAI, from GPT-5.6 on: tokens written to the cache

    def __post_init__(self) -> None:
        self.cached_tokens, self.cache_write_tokens = raw_figure(self.cached_tokens), raw_figure(self.cache_write_tokens)


class CompletionDetails(Struct, omit_defaults=True):
    reasoning_tokens: Count | None = None


class Usage(Struct, omit_defaults=True):
    """Token figures read raw (`raw_figure`): a negative or absurd one is not used, and said so, not a failed reply."""

    prompt_tokens: Any = None
    completion_tokens: Any = None
    total_tokens: Any = None
    prompt_tokens_details: PromptDetails | None = None
    completion_tokens_details: CompletionDetails | None = None
    cache_creation_input_tokens: Any = None  # Anthropic's cache writes, as gateways pass them on

    def __post_init__(self) -> None:
        self.prompt_tokens, self.completion_tokens = raw_figure(self.prompt_tokens), raw_figure(self.completion_tokens)
        self.total_tokens = raw_figure(self.total_tokens)
        self.cache_creation_input_tokens = raw_figure(self.cache_creation_input_tokens)


class CacheMissReason(TypedDict):
    type: str  # a short name
    cache_missed_input_tokens: NotRequired[int]


class CacheDiagnostics(TypedDict):
    cache_miss_reason: CacheMissReason


def lenient_diagnostics(value: Any) -> CacheDiagnostics | None:
    """Anthropic's cache diagnostics, kept only in their documented shape ({"cache_miss_reason": {"type": a short
    name, "cache_missed_input_tokens": a count}}); anything else is unknown (None), never a failed reply."""
    reason = value.get("cache_miss_reason") if isinstance(value, dict) else None
    kind = reason.get("type") if isinstance(reason, dict) else None
    if not isinstance(reason, dict) or not isinstance(kind, str) or not kind or len(kind) > 64:
        return None
    missed = lenient_count(reason.get("cache_missed_input_tokens"))
    miss: CacheMissReason = {"type": kind}
    if missed is not None:
        miss["cache_missed_input_tokens"] = missed
    return {"cache_miss_reason": miss}


class Timings(Struct, omit_defaults=True):
    """llama.cpp's figures for one reply (a rate may be null when a time was zero)."""

    cache_n: Count | None = None
    prompt_n: Count | None = None
    prompt_ms: Measure | None = None
    prompt_per_token_ms: Measure | None = None
    prompt_per_second: Measure | None = None
    predicted_n: Count | None = None
    predicted_ms: Measure | None = None
    predicted_per_token_ms: Measure | None = None
    predicted_per_second: Measure | None = None


class ErrorDetail(Struct):
    """An error's `error` object. The figures of a refusal for size are read leniently (out of range or of the
    wrong type: unknown), so an odd figure does not hide that the server refused the request for its size."""

    message: Text | None = None
    type: Short | None = None
    code: Short | int | None = None
    n_prompt_tokens: Any = None
    n_ctx: Any = None

    def __post_init__(self) -> None:
        self.n_prompt_tokens = lenient_count(self.n_prompt_tokens)
        ctx = lenient_count(self.n_ctx)
        self.n_ctx = ctx if ctx and ctx <= MAX_CONTEXT else None


def lenient_count(value: Any) -> int | None:
    """A token count from a field checked only here: anything but a count in range is unknown (None)."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT:
        return value
    return None


class Chunk(Struct):
    """One chat.completion.chunk, or a whole chat.completion (choices carry `message`).

    `truncated` (llama.cpp) and `prompt_eval_count` (Ollama's own field) are read leniently: a value
    of the wrong shape becomes None (unknown) instead of failing the reply, since they only inform
    the sent-against-received comparison.
    """

    model: ModelId | None = None
    choices: Annotated[list[Choice], Meta(max_length=MAX_CHOICES)] | None = None
    usage: Usage | None = None
    timings: Timings | None = None
    error: ErrorDetail | Text | None = None
    truncated: Any = None
    prompt_eval_count: Any = None
    diagnostics: Any = None

    def __post_init__(self) -> None:
        self.diagnostics = lenient_diagnostics(self.diagnostics)
        self.truncated = self.truncated if isinstance(self.truncated, bool) else None
        self.prompt_eval_count = lenient_count(self.prompt_eval_count)


class ErrorBody(Struct):
    error: ErrorDetail | Text | None = None
    message: Text | None = None  # some servers put it at the top level


# -- probes --------------------------------------------------------------------------------------
class ModelMeta(Struct):
    n_ctx: Context | None = None
    n_ctx_train: Context | None = None


class ModelEntry(Struct):
    id: ModelId
    meta: ModelMeta | None = None
    max_model_len: Context | None = None  # vLLM


class ModelList(Struct):
    data: Annotated[list[ModelEntry], Meta(max_length=MAX_MODELS)] = []


class GenerationSettings(Struct):
    n_ctx: Context | None = None


class Modalities(Struct):
    """What llama.cpp's loaded model takes besides text (its /props `modalities`)."""

    vision: bool | None = None
    audio: bool | None = None


class Props(Struct):
    """llama.cpp's /props."""

    chat_template: Template | None = None
    bos_token: Short | None = None
    eos_token: Short | None = None
    build_info: Short | None = None
    n_ctx: Context | None = None
    default_generation_settings: GenerationSettings | None = None
    total_slots: Annotated[int, Meta(ge=1, le=MAX_SLOTS)] | None = None
    endpoint_slots: bool | None = None
    modalities: Modalities | None = None


class Slot(Struct):
    """One entry of llama.cpp's /slots: its context, and how many tokens it holds after its last task."""

    id: Annotated[int, Meta(ge=0, le=MAX_SLOTS - 1)]
    n_ctx: Context | None = None
    is_processing: bool = False
    id_task: Annotated[int, Meta(ge=-1, le=MAX_COUNT)] | None = None
    n_prompt_tokens: Count | None = None  # prompt and generated tokens the slot holds
    n_prompt_tokens_cache: Count | None = None


Slots = Annotated[list[Slot], Meta(max_length=MAX_SLOTS)]


class Version(Struct):
    """vLLM's /version, Ollama's /api/version."""

    version: Short


class OllamaShow(Struct):
    template: Template | None = None
    model_info: Annotated[dict[Short, Any], Meta(max_length=10_000)] | None = None


class OllamaRunning(Struct):
    name: ModelId | None = None
    model: ModelId | None = None
    context_length: Context | None = None  # the window this loaded model runs with (num_ctx)


class OllamaPs(Struct):
    """Ollama's /api/ps: the models loaded now."""

    models: Annotated[list[OllamaRunning], Meta(max_length=MAX_MODELS)] = []


class LMStudioModel(Struct):
    id: ModelId
    max_context_length: Context | None = None
    loaded_context_length: Context | None = None


class LMStudioModels(Struct):
    data: Annotated[list[LMStudioModel], Meta(max_length=MAX_MODELS)]


class GatewayReadiness(Struct):
    """LiteLLM's /health/readiness (no key needed): {"status": "healthy", "db": "Not connected", …}."""

    status: Short
    db: Short | None = None
    litellm_version: Short | None = None


class GatewayParams(Struct):
    """What a LiteLLM gateway says it forwards a model name to (its config's litellm_params)."""

    model: ModelId | None = None
    api_base: Short | None = None  # the upstream's URL: shown as information, never contacted


class GatewayModelInfo(Struct):
    """The numbers a gateway's model_info may carry; read leniently (a wrong value is unknown)."""

    max_input_tokens: Any = None
    max_tokens: Any = None

    def __post_init__(self) -> None:
        for name in ("max_input_tokens", "max_tokens"):
            value = getattr(self, name)
            ok = isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_CONTEXT
            setattr(self, name, value if ok else None)


class GatewayModel(Struct):
    model_name: ModelId | None = None
    litellm_params: GatewayParams | None = None
    model_info: GatewayModelInfo | None = None


class GatewayModels(Struct):
    """LiteLLM's /v1/model/info (with the key)."""

    data: Annotated[list[GatewayModel], Meta(max_length=MAX_MODELS)] = []


class Token(Struct):
    id: TokenId
    piece: Text | Annotated[list[Byte], Meta(max_length=64)] = ""


class Tokenized(Struct):
    """/tokenize: ids, or {id, piece} with `with_pieces`; vLLM adds count and max_model_len."""

    tokens: Annotated[list[TokenId | Token], Meta(max_length=MAX_TEXT)]


class Prompt(Struct):
    """llama.cpp's /apply-template, vLLM's /detokenize."""

    prompt: Text


# -- decoding ------------------------------------------------------------------------------------
Redact = Callable[[str], str]


def excerpt(text: str, redact: Redact | None = None, limit: int = 120) -> str:
    """The start of some server text for a message: the key removed before the text is cut."""
    window = text[: limit + 512]
    window = redact(window) if redact else window
    return window[:limit] + ("…" if len(window) > limit else "")


def _preview(raw: bytes | str, redact: Redact | None) -> str:
    text = raw[:1024] if isinstance(raw, str) else raw[:1024].decode("utf-8", "replace")
    return repr(excerpt(text, redact))


def decode(raw: bytes | str, shape: type[T], what: str, redact: Redact | None = None) -> T:
    """`raw` decoded straight into `shape` (`Any`: any JSON value); errors name the field and the reason."""
    try:
        return msgspec.json.decode(raw, type=shape)
    except msgspec.ValidationError as exc:
        raise MalformedAnswer(f"{what} has the wrong shape: {exc}") from None
    except (msgspec.DecodeError, RecursionError) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else "not JSON"
        raise NotJSON(f"{what} is {reason}: {_preview(raw, redact)}") from None


def convert(value: Any, shape: type[T], what: str) -> T:
    """An already decoded value checked against `shape`."""
    try:
        return msgspec.convert(value, shape)
    except msgspec.ValidationError as exc:
        raise MalformedAnswer(f"{what} has the wrong shape: {exc}") from None


def context_size(value: Any, what: str) -> int:
    return convert(value, Context, what)


def plain(struct: Struct | None) -> JSONObject | None:
    """A struct as a plain dict without its unset fields (for records saved in sessions)."""
    if struct is None:
        return None
    found = msgspec.to_builtins(struct)
    return found if isinstance(found, dict) else None  # (always a dict: no shape here is array_like)
