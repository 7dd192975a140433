"""What config.toml's `[params]` may send, as a typed struct: OpenAI's chat completion fields and the sampling
fields of llama.cpp, vLLM and Ollama's OpenAI API, each with its type and, where the settings screen has one, its
bounds. A key checked alone against it (a wrong one is said and dropped, the others still sent): a misspelt key
or a value of the wrong type never reaches a request. `[extra_params]` sends a field as written, unchecked.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Callable, Iterable

import msgspec
from msgspec import Meta

from tui.errors import one_line, unknown_key_line

Real = Annotated[float, Meta(ge=-1e9, le=1e9)]
Count = Annotated[int, Meta(ge=0, le=2**31)]
JsonObject = dict[str, Any]


class SamplingParams(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """Each field None when not given. The bounds of the settings screen's fields are the same (tuning.FIELDS)."""

    temperature: Annotated[float, Meta(ge=0, le=5)] | None = None
    top_p: Annotated[float, Meta(ge=0, le=1)] | None = None
    top_k: Annotated[int, Meta(ge=0, le=100_000)] | None = None
    min_p: Annotated[float, Meta(ge=0, le=1)] | None = None
    presence_penalty: Annotated[float, Meta(ge=-2, le=2)] | None = None
    frequency_penalty: Annotated[float, Meta(ge=-2, le=2)] | None = None
    seed: Annotated[int, Meta(ge=-1, le=2**63 - 1)] | None = None
    stop: str | list[str] | None = None
    n: Annotated[int, Meta(ge=1, le=128)] | None = None
    logprobs: bool | None = None
    top_logprobs: Annotated[int, Meta(ge=0, le=20)] | None = None
    logit_bias: dict[str, Real] | None = None
    response_format: JsonObject | None = None
    reasoning_effort: str | None = None
    verbosity: str | None = None
    parallel_tool_calls: bool | None = None
    tool_choice: str | JsonObject | None = None
    user: str | None = None
    service_tier: str | None = None
    max_completion_tokens: Count | None = None
    stream_options: JsonObject | None = None
    typical_p: Real | None = None
    repeat_penalty: Real | None = None
    repeat_last_n: Annotated[int, Meta(ge=-1, le=2**31)] | None = None
    mirostat: Annotated[int, Meta(ge=0, le=2)] | None = None
    mirostat_tau: Real | None = None
    mirostat_eta: Real | None = None
    tfs_z: Real | None = None
    dry_multiplier: Real | None = None
    dry_base: Real | None = None
    dry_allowed_length: Count | None = None
    dry_penalty_last_n: Annotated[int, Meta(ge=-1, le=2**31)] | None = None
    xtc_probability: Real | None = None
    xtc_threshold: Real | None = None
    samplers: str | list[str] | None = None
    cache_prompt: bool | None = None
    n_probs: Count | None = None
    min_tokens: Count | None = None
    repetition_penalty: Real | None = None
    length_penalty: Real | None = None
    chat_template_kwargs: JsonObject | None = None
    keep_alive: str | int | None = None
    num_ctx: Count | None = None


SAMPLING_PARAMS = frozenset(SamplingParams.__struct_fields__)


def checked_params(given: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The `[params]` a request may send, and a line for each key left out: unknown (with the closest known one),
    or of the wrong type or out of bounds."""
    return checked_alone(given, SamplingParams, sorted(given, key=str),
                         lambda key, known: "config.toml: " + unknown_key_line(key, "[params]", known),
                         lambda key, value, why: f"config.toml [params]: {key} = {shown_value(value)}: {why} "
                                                 "(not sent)")


def checked_alone(given: dict[str, Any], struct: type[msgspec.Struct], keys: Iterable[str],
                  unknown: Callable[[str, frozenset[str]], str],
                  wrong: Callable[[str, Any, str], str]) -> tuple[dict[str, Any], list[str]]:
    """Each of `keys` of `given` checked alone against `struct` (so one bad key is left out and the rest kept), and
    a line for each one left out: `unknown(key, known keys)`, or `wrong(key, value, why)`."""
    known = frozenset(struct.__struct_fields__)
    kept: dict[str, Any] = {}
    problems: list[str] = []
    for key in keys:
        value = given[key]
        if key not in known:
            problems.append(unknown(key, known))
            continue
        try:
            msgspec.convert({key: value}, struct, strict=True)
        except msgspec.ValidationError as exc:
            problems.append(wrong(key, value, type_problem(exc)))
            continue
        kept[key] = value
    return kept, problems


def type_problem(exc: msgspec.ValidationError) -> str:
    """msgspec's reason without the path (the key is named already) and without the "not given" that every
    optional field allows: "expected `float` >= 0.0", "expected `float`, got `str`"."""
    return str(exc).split(" - at ", 1)[0].replace("Expected", "expected", 1).replace(" | null`", "`")


def shown_value(value: Any) -> str:
    """A value as TOML wrote it, near enough for one line (true, "hot", [1, 2]), cut short."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = str(value)
    return one_line(text, 40)
