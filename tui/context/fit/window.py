"""The context window a request must fit: how big it is, where that figure came from, and what the
server does with a request that does not fit.

A window figure has a source, because the figures disagree in practice: a server property is what
the running server uses (llama.cpp /props n_ctx, vLLM max_model_len, LM Studio's loaded context,
Ollama /api/ps); model metadata is what the model was trained for, which a server may not use
(Ollama runs with its own num_ctx, often far smaller); config is the user's setting; a default is
ctxpane's assumption; observed is what a server kept when it cut a request.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal, Sequence, TypeAlias

from tui.context.json_types import JSONObject

# most to least trusted: the first one present is the window a request must fit
SOURCES = ("server", "observed", "config", "model", "default")
# What a server does with a prompt over its window, and with a reply that reaches it.
PromptOverflow: TypeAlias = Literal["refuse", "truncate-front", "truncate-middle", "unknown"]
ReplyOverflow: TypeAlias = Literal["stop", "shift", "unknown"]
REFUSE: PromptOverflow = "refuse"
FRONT: PromptOverflow = "truncate-front"
MIDDLE: PromptOverflow = "truncate-middle"
UNKNOWN: Literal["unknown"] = "unknown"
STOP: ReplyOverflow = "stop"
SHIFT: ReplyOverflow = "shift"


@dataclass(frozen=True)
class WindowSize:
    tokens: int
    source: str  # one of SOURCES (a stored window may name another: it ranks last)
    detail: str = ""  # which property or setting, e.g. "/props default_generation_settings.n_ctx"

    def to_dict(self) -> JSONObject:
        return asdict(self)


@dataclass(frozen=True)
class Overflow:
    """What a kind of server does with a prompt over its window, and with a reply that reaches it."""

    prompt: PromptOverflow
    reply: ReplyOverflow
    keep_head: int = 0  # tokens a front cut keeps at the start (Ollama's num_keep)
    basis: str = ""  # where this knowledge comes from


# Per server kind (tui/client/server_info.py names them). Each entry says how it is known.
BEHAVIOUR = {
    "llama.cpp": Overflow(REFUSE, STOP, 0, "measured on llama.cpp b11669: a prompt of n_ctx tokens or more gets "
                                          "a 400 exceed_context_size_error; a reply stops when the context is full "
                                          "(with --context-shift it goes on, dropping the oldest tokens)"),
    "ollama": Overflow(FRONT, STOP, 4, "Ollama's runner logs 'truncating input prompt' and keeps the first "
                                       "num_keep (4) tokens and the newest half of the rest of num_ctx "
                                       "(4 + (num_ctx - 4) // 2 tokens in all)"),
    "lmstudio": Overflow(MIDDLE, UNKNOWN, 0, "LM Studio's default context overflow policy cuts the middle of the "
                                             "conversation and keeps its start and end"),
    "vllm": Overflow(REFUSE, STOP, 0, "vLLM refuses a request over max_model_len with a 400"),
    "openai": Overflow(REFUSE, STOP, 0, "OpenAI refuses a request over the model's context with a 400"),
}
UNKNOWN_BEHAVIOUR = Overflow(UNKNOWN, UNKNOWN, 0, "this kind of server's behaviour is not known: "
                                                  "`ctxpane doctor` measures it")


def behaviour(kind: str) -> Overflow:
    return BEHAVIOUR.get(kind, UNKNOWN_BEHAVIOUR)


def choose_window(candidates: Sequence[WindowSize | None]) -> WindowSize | None:
    """The window to plan with: the most trusted source present (see SOURCES); ties go to the first given."""
    present = [c for c in candidates if c is not None and c.tokens > 0]
    if not present:
        return None
    return min(present, key=lambda c: SOURCES.index(c.source) if c.source in SOURCES else len(SOURCES))


@dataclass(frozen=True)
class FitCheck:
    """Before sending: does the request fit the window, and what happens when it does not."""

    fits: bool | None  # None: no window known
    prompt_tokens: int
    max_tokens: int
    window: WindowSize | None
    over_by: int  # prompt tokens past what the server accepts (0 when they fit)
    reply_room: int | None  # tokens left for the reply
    consequence: str  # what the server will do, from BEHAVIOUR
    message: str

    def to_dict(self) -> JSONObject:
        data = asdict(self)
        data["window"] = self.window.to_dict() if self.window else None
        return data


def _consequence(kind: str, over: int, reply_short: bool) -> str:
    known = behaviour(kind)
    if over > 0:
        return {REFUSE: "the server will refuse it", FRONT: f"the server will silently cut ~{over} tokens from the "
                "front", MIDDLE: f"the server will silently cut ~{over} tokens from the middle"}.get(
            known.prompt, "the server may refuse it or cut it silently")
    if reply_short:
        return {STOP: "the reply will stop early, when the window is full",
                SHIFT: "the server will drop the oldest tokens to keep writing"}.get(
            known.reply, "the reply may stop early or the server may drop the oldest tokens")
    return ""


def fit_check(prompt_tokens: int, max_tokens: int, window: WindowSize | None, kind: str = "") -> FitCheck:
    """Whether `prompt_tokens` plus the reply reserved (`max_tokens`, 0: none) fit `window`.

    A prompt must leave room for at least one reply token (llama.cpp refuses a prompt of exactly
    n_ctx tokens), so the prompt fits when it is at most window - 1 tokens.
    """
    if window is None:
        return FitCheck(None, prompt_tokens, max_tokens, None, 0, None, "",
                        "the server's window is unknown: nothing to check this request against")
    over = max(0, prompt_tokens - (window.tokens - 1))
    room = max(0, window.tokens - prompt_tokens)
    reply_short = bool(max_tokens) and prompt_tokens + max_tokens > window.tokens
    consequence = _consequence(kind, over, reply_short)
    where = f"the window of {window.tokens} tokens ({window.source}{': ' + window.detail if window.detail else ''})"
    if over:
        message = f"this request ({prompt_tokens} tokens) will not fit {where}: {over} over; {consequence}"
    elif reply_short:
        message = (f"this request fits {where}, but leaves {room} tokens for a reply of up to {max_tokens}: "
                   f"{consequence}")
    else:
        message = f"fits {where}, with {room} tokens left for the reply"
    return FitCheck(over == 0 and not reply_short, prompt_tokens, max_tokens, window, over, room, consequence,
                    message)


def window_from_dict(data: object) -> WindowSize | None:
    """A stored window back (session records); None for anything that is not one."""
    if not isinstance(data, dict) or not isinstance(data.get("tokens"), int) or data["tokens"] < 1:
        return None
    return WindowSize(data["tokens"], str(data.get("source") or "default"), str(data.get("detail") or ""))
