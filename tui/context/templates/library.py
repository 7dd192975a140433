"""Where templates come from: built-in names, .jinja files, tokenizer_config.json, GGUF files, servers."""

from __future__ import annotations


import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from tui.context.templates.harmony import SPECIAL_TOKENS as HARMONY_TOKENS
from tui.context.untrusted.outside_files import FileProblem, read_bounded, read_json
from tui.context.templates.harmony import render_harmony
from tui.context.errors import TemplateNotFound, TemplateRenderError
from tui.context.families.identity import MODEL_FILE, SHIPPED, Identity, IdentitySource, display_name
from tui.context.families.registry import family_for_template
from tui.context.json_types import WireMessage

if TYPE_CHECKING:
    from tui.context.templates.limits import RenderLimits

MAX_TEMPLATE_FILE = 4 * 1024 * 1024  # a chat template (the largest real ones are a few dozen KB)
MAX_TOKENIZER_CONFIG = 64 * 1024 * 1024  # a tokenizer_config.json (some embed their vocabulary's added tokens)
# Strings that look like a template's control tokens: <|im_start|>, <｜User｜>, [INST], <start_of_turn>...
SPECIAL_PATTERN = re.compile(
    r"<\|[A-Za-z0-9_./:-]{1,40}\|>|<\|[A-Za-z0-9_]{1,30}>|<[A-Za-z0-9_]{1,30}\|>"
    r"|<｜[^｜<>\n]{1,40}｜>|\[/?[A-Z][A-Z_]{2,30}\]"
    r"|<(?:start|end)_of_turn>|</?s>|<bos>|<eos>|</?think>|</?tool_call>|</?tool_response>")


@dataclass
class BuiltinSpec:
    file: str | None
    defaults: dict[str, Any]
    family: str


BUILTINS: dict[str, BuiltinSpec] = {
    "chatml": BuiltinSpec("chatml.jinja", {}, "Qwen 2.5 / ChatML"),
    "qwen3": BuiltinSpec("qwen3.jinja", {}, "Qwen3"),
    "llama3": BuiltinSpec("llama3.jinja", {"bos_token": "<|begin_of_text|>"}, "Llama 3.1 / 3.3"),
    "mistral-v3": BuiltinSpec("mistral-v3.jinja", {"bos_token": "<s>", "eos_token": "</s>"}, "Mistral v3"),
    "mistral-tekken": BuiltinSpec("mistral-tekken.jinja", {"bos_token": "<s>", "eos_token": "</s>"},
                                  "Mistral tekken (Nemo)"),
    "gemma": BuiltinSpec("gemma.jinja", {"bos_token": "<bos>"}, "Gemma"),
    "deepseek-r1": BuiltinSpec("deepseek-r1.jinja", {"bos_token": "<｜begin▁of▁sentence｜>"}, "DeepSeek-R1"),
    "phi3": BuiltinSpec("phi3.jinja", {"eos_token": "<|endoftext|>"}, "Phi-3 / 3.5"),
    "harmony": BuiltinSpec(None, {}, "gpt-oss (harmony, as openai-harmony renders it)"),
    "openai": BuiltinSpec("openai.jinja", {"func_init": 7}, "OpenAI hosted chat, o200k models (assumed: its "
                          "published token accounting)"),
    "openai-cl100k": BuiltinSpec("openai.jinja", {"func_init": 10}, "OpenAI hosted chat, cl100k models (assumed: "
                                 "its published token accounting)"),
}
ALIASES = {"mistral": "mistral-v3", "tekken": "mistral-tekken", "qwen2.5": "chatml", "gpt-oss": "harmony",
           "llama3.1": "llama3", "llama3.3": "llama3", "deepseek": "deepseek-r1", "phi3.5": "phi3"}


@dataclass
class ChatTemplate:
    """A renderable template plus what the engine needs to know about it."""

    name: str
    origin: str  # "builtin", "file:PATH", "server:URL", ...
    source: str | None = None  # Jinja text (None for the harmony renderer)
    defaults: dict[str, Any] = field(default_factory=dict)
    renderer: Callable[..., str] | None = None
    limits: RenderLimits | None = field(default=None, repr=False, compare=False)  # None: DEFAULT_LIMITS
    _verbatim: bool | None = field(default=None, repr=False, compare=False)
    kind: IdentitySource = field(default=MODEL_FILE, compare=False)  # shipped, server or model file
    _identity: Identity | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def identity(self) -> Identity:
        """Family, source and the text's hash. A shipped template's family is its built-in's; any other
        template has a family only when its text is a built-in's, byte for byte (its name says nothing)."""
        if self._identity is None:
            digest = _sha256(self.source) if self.source is not None else None
            family = (family_for_template(self.name) if self.kind == SHIPPED
                      else _builtin_digests().get(digest) if digest is not None else None)
            self._identity = Identity(family, self.kind, digest, display_name(self.name))
        return self._identity

    def render(self, messages: list[WireMessage], **variables: Any) -> str:
        merged = {**self.defaults, **variables}
        if self.renderer is not None:
            try:
                return self.renderer(messages, **merged)
            except (TypeError, ValueError, KeyError, AttributeError) as exc:
                raise TemplateRenderError(type(exc).__name__, str(exc)) from None
        from tui.context.templates.limits import DEFAULT_LIMITS  # Jinja loads on the first render, not at import
        from tui.context.templates.hf_render import render_limited

        return render_limited(self.source or "", messages, merged, self.limits or DEFAULT_LIMITS)

    def copies_text_verbatim(self) -> bool:
        """Whether a user's text lands in the document unchanged (no trim, no escaping).

        Probed once per template; typing may splice text in place only when this holds.
        """
        if self._verbatim is None:
            probe = "  \u2063probe \"x\" <y>\n\n "
            try:
                self._verbatim = probe in self.render([{"role": "user", "content": probe}],
                                                      add_generation_prompt=True)
            except TemplateRenderError:
                self._verbatim = False
        return self._verbatim

    def special_strings(self) -> list[str]:
        """The control-token strings this template writes: what untrusted text must not contain."""
        found = set(HARMONY_TOKENS) if self.renderer is render_harmony else set()
        found.update(SPECIAL_PATTERN.findall(self.source or ""))
        for key in ("bos_token", "eos_token"):
            if isinstance(self.defaults.get(key), str) and self.defaults[key]:
                found.add(self.defaults[key])
        return sorted(found, key=lambda s: (-len(s), s))


def _sha256(text: str) -> str:
    import hashlib
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@lru_cache(maxsize=1)
def _builtin_digests() -> dict[str, str | None]:
    """The hash of each built-in template's text -> its family."""
    return {_sha256(builtin_template(key).source or ""): family_for_template(key)
            for key, spec in BUILTINS.items() if spec.file is not None}


def builtin_names() -> list[str]:
    return list(BUILTINS)


def builtin_template(name: str) -> ChatTemplate:
    key = ALIASES.get(name.lower(), name.lower())
    spec = BUILTINS.get(key)
    if spec is None:
        raise TemplateNotFound(f"unknown template {name!r}; built-in templates: {', '.join(BUILTINS)}")
    if spec.file is None:
        return ChatTemplate(key, "builtin", None, dict(spec.defaults), render_harmony, kind=SHIPPED)
    text = resources.files("tui.context.templates.builtin").joinpath(spec.file).read_text(encoding="utf-8")
    return ChatTemplate(key, "builtin", text, dict(spec.defaults), kind=SHIPPED)


def plain_chatml() -> ChatTemplate:
    """Built-in ChatML with no default system turn: what ctxpane assumes when nobody chose a template and the
    server shows none (Qwen 2.5's ChatML, the `chatml` built-in, adds a system prompt the user did not write)."""
    template = builtin_template("chatml")
    template.defaults["default_system"] = ""
    return template


def template_from_text(text: str, origin: str, name: str = "custom", *, kind: IdentitySource = MODEL_FILE,
                       **defaults: Any) -> ChatTemplate:
    """A template from text; `kind` is where it came from (SERVER for a server's own, else a model file)."""
    return ChatTemplate(name, origin, text, {k: v for k, v in defaults.items() if v is not None}, kind=kind)


def _pick_named(templates: list[Any], wanted: str | None) -> object:
    """The `template` of the entry named `wanted` ("default" when None), as the file holds it."""
    table = {t.get("name"): t.get("template") for t in templates if isinstance(t, dict)}
    key = wanted or "default"
    if key not in table:
        raise TemplateNotFound(f"no chat template named {key!r} (have: {', '.join(map(str, table))})")
    return table[key]


def _token_text(value: Any) -> str | None:
    if isinstance(value, dict):  # AddedToken serialised form
        return value.get("content")
    return value if isinstance(value, str) else None


def load_tokenizer_config(path: Path, variant: str | None = None) -> ChatTemplate:
    try:
        data = read_json(path, MAX_TOKENIZER_CONFIG)
    except FileProblem as exc:
        raise TemplateNotFound(str(exc)) from None
    if not isinstance(data, dict):
        raise TemplateNotFound(f"{path} is not a tokenizer_config.json (not a JSON object)")
    raw = data.get("chat_template")
    if raw is None:
        raise TemplateNotFound(f"{path} has no chat_template")
    text = _pick_named(raw, variant) if isinstance(raw, list) else raw
    if not isinstance(text, str):  # (a number or an object: no template to render, nor to hash)
        raise TemplateNotFound(f"{path}: chat_template is not text")
    return template_from_text(text, f"file:{path}", path.parent.name or "tokenizer_config",
                              bos_token=_token_text(data.get("bos_token")),
                              eos_token=_token_text(data.get("eos_token")))


def load_gguf(path: Path) -> ChatTemplate:
    """Read `tokenizer.chat_template` from a GGUF file's metadata (weights are not loaded)."""
    try:
        from gguf import GGUFReader
    except ImportError as exc:  # pragma: no cover - gguf is a dependency
        raise TemplateNotFound("reading GGUF files needs the 'gguf' package") from exc
    reader = GGUFReader(str(path), "r")

    def field_text(key: str) -> str | None:
        item = reader.fields.get(key)
        return None if item is None else bytes(item.parts[item.data[0]]).decode("utf-8")

    def token(key: str) -> str | None:
        item = reader.fields.get(key)
        tokens = reader.fields.get("tokenizer.ggml.tokens")
        if item is None or tokens is None:
            return None
        index = int(item.parts[item.data[0]][0])
        return bytes(tokens.parts[tokens.data[index]]).decode("utf-8")

    text = field_text("tokenizer.chat_template")
    if text is None:
        raise TemplateNotFound(f"{path} has no tokenizer.chat_template")
    return template_from_text(text, f"gguf:{path}", path.stem, bos_token=token("tokenizer.ggml.bos_token_id"),
                              eos_token=token("tokenizer.ggml.eos_token_id"))


def load_template(spec: str) -> ChatTemplate:
    """A template by built-in name or by path (.jinja, tokenizer_config.json, .gguf)."""
    path = Path(spec).expanduser()
    if not path.exists():
        if "/" in spec or spec.endswith((".jinja", ".json", ".gguf")):
            raise TemplateNotFound(f"template file not found: {spec}")
        return builtin_template(spec)
    if path.is_dir():
        raise TemplateNotFound(f"{spec} is a directory, not a template file")
    if path.suffix == ".gguf":
        return load_gguf(path)
    if path.suffix == ".json":
        return load_tokenizer_config(path)
    try:  # a regular file of bounded size (a FIFO or /dev/zero named as a template is refused, not read)
        text = read_bounded(path, MAX_TEMPLATE_FILE).decode("utf-8")
    except FileProblem as exc:
        raise TemplateNotFound(str(exc)) from None
    except UnicodeDecodeError:
        raise TemplateNotFound(f"{path} is not UTF-8 text") from None
    return template_from_text(text, f"file:{path}", path.stem)
