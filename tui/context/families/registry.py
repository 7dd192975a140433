"""The model registry: each family's templates, tokenizer, vocabulary, stop tokens, cache rule and windows.

The one place that knows model families. Everything else asks it: which tokenizer counts for a model
id, which shipped tokenizer a template's family uses, how large a hosted model's window is, whether a
vocabulary (by its hash) is a family's own.

Model ids come from servers and session files: they are matched here as data only. An id longer than
MODEL_ID_LIMIT or with a control character matches nothing; the last path segment, case-folded, is
compared with plain prefixes (no pattern is ever built from an id). What matches nothing is an estimate.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tui.context.families.identity import SHIPPED, Identity, estimate

MODEL_ID_LIMIT = 256
ESTIMATE_TOKENIZER = "o200k_base"  # what counts, as an estimate, for a family without a shipped tokenizer


@dataclass(frozen=True)
class Family:
    key: str
    display: str
    templates: tuple[str, ...]  # built-in templates written in this family's format
    tokenizer: str | None  # the shipped tokenizer that is the family's own; None: none is shipped
    vocabularies: tuple[str, ...]  # sha256 digests of the family's own vocabulary (tokens.py computes them)
    stop_tokens: tuple[str, ...]
    cache_rule: str | None = None  # the provider's rule when only its maker serves the family


@dataclass(frozen=True)
class ModelId:
    prefix: str  # case-folded start of the model id's last path segment
    family: str
    context_window: int | None = None  # tokens, for servers that do not say


QWEN3_JSON = "aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4"  # tokenizer.json bytes
O200K = "317c8839d761ba6e9567fe5105c17fa2ce490051fa47920d1baef09083ba315b"  # ranks, pattern and specials
O200K_HARMONY = "28309fed242f1cad058cd815dd976c2841bda00746b53ef50fd66c146d803d2d"
CL100K = "e0e5cc361f2c5ebeaa2f65f4da6625a578f5ccea49dc7e918ed91c35b768096c"

FAMILIES: dict[str, Family] = {family.key: family for family in (
    # Qwen2, 2.5 and 3 share one BPE vocabulary; Qwen3 adds <think> tokens, which a template writes as markers.
    Family("qwen", "Qwen 2.5 / Qwen3", ("qwen3", "chatml"), "qwen3", (QWEN3_JSON,), ("<|im_end|>", "<|endoftext|>")),
    Family("llama3", "Llama 3.x", ("llama3",), None, (), ("<|eot_id|>", "<|eom_id|>", "<|end_of_text|>")),
    Family("mistral", "Mistral", ("mistral-v3", "mistral-tekken"), None, (), ("</s>",)),
    Family("gemma", "Gemma", ("gemma",), None, (), ("<end_of_turn>", "<eos>")),
    Family("deepseek", "DeepSeek-R1 / V3", ("deepseek-r1",), None, (), ("<｜end▁of▁sentence｜>",)),
    Family("phi3", "Phi-3 / 3.5", ("phi3",), None, (), ("<|end|>", "<|endoftext|>")),
    Family("gpt-oss", "gpt-oss (harmony)", ("harmony",), "o200k_harmony", (O200K_HARMONY,), ("<|return|>", "<|call|>")),
    Family("openai-o200k", "OpenAI (o200k_base)", (), "o200k_base", (O200K,), (), "openai"),
    Family("openai-cl100k", "OpenAI (cl100k_base)", (), "cl100k_base", (CL100K,), (), "openai"),
    Family("claude", "Claude (Anthropic)", (), None, (), (), "anthropic"),
    Family("gemini", "Gemini (Google)", (), None, (), (), "gemini"),
)}

MODEL_IDS: tuple[ModelId, ...] = (
    ModelId("qwen3", "qwen"), ModelId("qwen2", "qwen"), ModelId("qwq", "qwen"), ModelId("tiny-qwen3", "qwen"),
    ModelId("llama-3.", "llama3"), ModelId("llama-3-", "llama3"), ModelId("llama3", "llama3"),
    ModelId("meta-llama-3", "llama3"),
    ModelId("mistral", "mistral"), ModelId("mixtral", "mistral"), ModelId("ministral", "mistral"),
    ModelId("magistral", "mistral"), ModelId("devstral", "mistral"), ModelId("codestral", "mistral"),
    ModelId("gemma", "gemma"),
    ModelId("deepseek-r1", "deepseek"), ModelId("deepseek-v3", "deepseek"), ModelId("deepseek-chat", "deepseek"),
    ModelId("deepseek-reasoner", "deepseek"),
    ModelId("phi-3", "phi3"), ModelId("phi3", "phi3"),
    ModelId("gpt-oss", "gpt-oss", 131_072),
    ModelId("gpt-4o", "openai-o200k", 128_000), ModelId("chatgpt-4o", "openai-o200k", 128_000),
    ModelId("gpt-4.1", "openai-o200k", 1_047_576), ModelId("gpt-4.5", "openai-o200k", 128_000),
    ModelId("gpt-5", "openai-o200k", 400_000), ModelId("o1", "openai-o200k", 200_000),
    ModelId("o3", "openai-o200k", 200_000), ModelId("o4", "openai-o200k", 200_000),
    ModelId("gpt-4-turbo", "openai-cl100k", 128_000), ModelId("gpt-4", "openai-cl100k", 8_192),
    ModelId("gpt-3.5", "openai-cl100k", 16_385), ModelId("gpt-35", "openai-cl100k", 16_385), ModelId("text-embedding-3", "openai-cl100k"),
    ModelId("claude", "claude"), ModelId("gemini-", "gemini"),
)
# Families whose shipped tokenizer is compared with a server's ids when the model id names no family.
CHECKED_WHEN_UNKNOWN = ("qwen",)
_LONGEST_FIRST = tuple(sorted(MODEL_IDS, key=lambda entry: -len(entry.prefix)))
_BY_VOCABULARY = {digest: family.key for family in FAMILIES.values() for digest in family.vocabularies}
_BY_TEMPLATE = {name: family.key for family in FAMILIES.values() for name in family.templates}
_BY_TOKENIZER = {family.tokenizer: family for family in FAMILIES.values() if family.tokenizer}


def _model_key(model: object) -> str | None:
    """The part of a model id that is compared: its last path segment, case-folded; None if unusable."""
    if not isinstance(model, str) or not model or len(model) > MODEL_ID_LIMIT or not model.isprintable():
        return None
    last = model.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    return last.casefold() or None


def model_entry(model: object) -> ModelId | None:
    """The registry's row for a model id (the longest prefix that starts it), or None. A colon-separated id is
    tried whole (`qwen3:8b`, Ollama's tag), then part by part: a fine-tune `ft:gpt-4o-mini-…:org::id`, a
    provider's `openai:gpt-4o`."""
    key = _model_key(model)
    if key is None:
        return None
    for candidate in (key, *key.split(":")):
        found = next((entry for entry in _LONGEST_FIRST if candidate.startswith(entry.prefix)), None)
        if found is not None:
            return found
    return None


def family_for_model(model: object) -> Family | None:
    entry = model_entry(model)
    return FAMILIES[entry.family] if entry else None


def family(key: str | None) -> Family | None:
    return FAMILIES.get(key) if isinstance(key, str) else None


def context_window(model: object) -> int | None:
    """A hosted model's context window when the server does not say, or None."""
    entry = model_entry(model)
    return entry.context_window if entry else None


def tokenizer_for_family(key: str | None) -> str:
    """The shipped tokenizer to count with for a family: its own, else the estimate tokenizer."""
    found = family(key)
    return found.tokenizer if found and found.tokenizer else ESTIMATE_TOKENIZER


def tokenizer_for_model(model: str) -> str:
    """The shipped tokenizer for a model id: its family's own, else the estimate tokenizer."""
    found = family_for_model(model)
    return tokenizer_for_family(found.key if found else None)


# Hosted families whose template is not published: the built-in that frames a request as the provider's
# published token accounting does. It names no family (its counts are never "exact": the text is assumed).
HOSTED_TEMPLATES = {"openai-o200k": "openai", "openai-cl100k": "openai-cl100k"}


def template_for_model(model: object) -> str | None:
    """The built-in template to assume for a model id when the server's own is out of reach (a gateway, a hosted
    API, `render` of a body), or None. Of a family's built-ins, the one whose name the id contains ("qwen3" in
    "tiny-qwen3"), else its first; a hosted family's accounting template."""
    found, key = family_for_model(model), _model_key(model)
    if found is not None and found.key in HOSTED_TEMPLATES:
        return HOSTED_TEMPLATES[found.key]
    if found is None or not found.templates or key is None:
        return None
    return next((name for name in found.templates if name in key), found.templates[0])


def family_for_vocabulary(digest: str | None) -> str | None:
    """The family whose own vocabulary has this hash, or None."""
    return _BY_VOCABULARY.get(digest) if isinstance(digest, str) else None


def family_for_template(builtin: str | None) -> str | None:
    """The family a built-in template's format belongs to (by the built-in's own key), or None."""
    return _BY_TEMPLATE.get(builtin) if isinstance(builtin, str) else None


def checked_on_server(model: object) -> list[Family]:
    """Families whose shipped tokenizer to compare with a server's ids: the model id's own, then the usual ones."""
    named = family_for_model(model)
    keys = dict.fromkeys([*([named.key] if named else []), *CHECKED_WHEN_UNKNOWN])
    return [FAMILIES[key] for key in keys if FAMILIES[key].tokenizer]


# Servers whose own cache rule applies whatever model they serve (keys of cache_rules.RULES).
SERVER_CACHE_RULES = {"llama.cpp": "llama.cpp", "openai": "openai", "anthropic": "anthropic", "gemini": "gemini",
                      "deepseek": "deepseek"}


def cache_rule(server_kind: str, model: object = None) -> str:
    """The cache rule to predict with: the server's own (llama.cpp, a provider's API), else the rule of the
    provider that alone serves the model's family, else `unknown`: a gateway or another server's rule is not
    guessed (OpenAI's rule predicted 0 where a gateway's llama.cpp reused 19)."""
    if server_kind in SERVER_CACHE_RULES:
        return _by_generation(SERVER_CACHE_RULES[server_kind], model)
    found = family_for_model(model)
    if found is None and gpt_version(model) is not None:  # a GPT the registry has no row for (gpt-6-sol)
        return _by_generation("openai", model)
    return _by_generation(found.cache_rule, model) if found and found.cache_rule else "unknown"


# the whole id (or one colon-separated part of it): gpt-5.6, chatgpt-5.6, codex-gpt-5.6-mini, ft:gpt-5.6:org
_GPT_VERSION = re.compile(r"(?:chat|codex-)?gpt-([1-9]\d?)(?:\.([1-9]\d?|0))?(?![0-9])[a-z0-9._-]*")


def gpt_version(model: object) -> tuple[int, int] | None:
    """(major, minor) of an OpenAI GPT model id, or None for any other id (a pattern, a hostile string)."""
    key = _model_key(model)
    if key is None:
        return None
    found = next((m for m in map(_GPT_VERSION.fullmatch, (key, *key.split(":"))) if m is not None), None)
    return (int(found.group(1)), int(found.group(2) or 0)) if found else None


def _by_generation(rule: str, model: object) -> str:
    """OpenAI's rule moved with GPT-5.6: breakpoints, no 128-token steps, writes billed (its family and later)."""
    version = gpt_version(model) if rule == "openai" else None
    return "openai-5.6" if version is not None and version >= (5, 6) else rule


def recorded_tokenizer(name: object) -> Identity:
    """The identity behind a tokenizer name a session file records (files name tokenizers, older ones only so).

    A shipped tokenizer's name means that tokenizer; anything else (a path, a server, a hostile string)
    is an estimate: what it named cannot be had again offline.
    """
    found = _BY_TOKENIZER.get(name) if isinstance(name, str) else None
    if found is None:
        return estimate(name)
    return Identity(found.key, SHIPPED, found.vocabularies[0] if found.vocabularies else None, str(name))


def offline_tokenizer(recorded: object, template_family: str | None) -> str:
    """The shipped tokenizer to count a stored session with: the recorded one if shipped, else the template's."""
    identity = recorded_tokenizer(recorded)
    return identity.name if identity.source == SHIPPED else tokenizer_for_family(template_family)


def offline_cache_rule(model: object) -> str:
    """The cache rule for a session read without its server (render, replay, export): the rule of the provider
    that alone serves the model's family (OpenAI's for gpt-4o), else llama.cpp's, the self-hosted default."""
    found = family_for_model(model)
    if found is None and gpt_version(model) is not None:  # a GPT the registry has no row for: OpenAI's rule
        return _by_generation("openai", model)
    return _by_generation(found.cache_rule, model) if found is not None and found.cache_rule else "llama.cpp"
