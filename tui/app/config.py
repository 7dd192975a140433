"""Where the endpoint and settings come from: flags, then the environment, then config.toml (XDG)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import msgspec

from tui.context.untrusted.outside_files import FileProblem, read_toml
from tui.controller.config_params import checked_alone, shown_value
from tui.errors import one_line, unknown_key_line

from platformdirs import user_config_dir


class ConfigError(ValueError):
    """A config file that cannot be used: the app starts with defaults and shows this."""


def config_dir() -> Path:
    return Path(user_config_dir("ctxpane", appauthor=False))


@dataclass
class Settings:
    base_url: str = ""
    model: str = ""
    api_key_env: str = "OPENAI_API_KEY"
    template: str = ""
    tokenizer: str = ""
    theme: str = ""
    provider_count: str = ""  # openai, anthropic or gemini: its own count asked before each send; "" off
    glyphs: str = ""  # "plain": no mark that needs an emoji font (📌 pinned, the header's ⭘)
    api: str = ""  # the API the chat speaks: chat (completions; ""), responses or messages
    review_base_url: str = ""  # the isolated reviewer's own endpoint ("": the chat's)
    review_model: str = ""  # the model that reviews risky tool calls ("": the chat's)
    scan_local: bool = True
    policy: dict = field(default_factory=dict)  # config.toml [policy]: new sessions take it
    params: dict = field(default_factory=dict)  # config.toml [params]: sampling parameters new sessions send
    extra_params: dict = field(default_factory=dict)  # config.toml [extra_params]: sent as written, unchecked
    keys: dict[str, str] = field(default_factory=dict)
    source: dict[str, str] = field(default_factory=dict)  # where base_url etc. came from, for the status line


class ConfigFile(msgspec.Struct, forbid_unknown_fields=True):
    """config.toml's top level, typed: each key is checked alone against it (checked_config), so one wrong key is
    said and left out while the others still count. `[params]` and `[policy]` are checked where new sessions take
    them (tui/controller/tuning.py); `[extra_params]` is sent as written."""

    base_url: str = ""
    model: str = ""
    api_key_env: str = ""
    template: str = ""
    tokenizer: str = ""
    theme: str = ""
    provider_count: str = ""
    glyphs: str = ""
    api: str = ""
    review_base_url: str = ""
    review_model: str = ""
    scan_local: bool = True
    policy: dict[str, Any] = {}
    params: dict[str, Any] = {}
    extra_params: dict[str, Any] = {}
    keys: dict[str, Any] = {}  # each value a key name: checked one by one (_bindings_named)


TABLES = frozenset({"policy", "params", "extra_params", "keys"})
TEXT_KEYS = tuple(key for key in ConfigFile.__struct_fields__ if key not in TABLES and key != "scan_local")


def read_config(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        return read_toml(path)
    except FileProblem as exc:  # too deep, too large, not TOML, a FIFO: one line, and the defaults
        raise ConfigError(str(exc)) from None


def checked_config(data: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The keys of config.toml's top level that ConfigFile takes, and a line for each one left out: unknown (with
    the closest known key) or of the wrong type (`scan_local = "no"` is not false: the default is used)."""
    kept, problems = checked_alone(
        data, ConfigFile, data, lambda key, known: unknown_key_line(key, "config.toml", known),
        lambda key, value, why: f"config.toml: {f'[{key}]' if key in TABLES else key} = {shown_value(value)}: {why} "
                                "(default used)")
    if "keys" in kept:
        kept["keys"], said = _bindings_named(kept["keys"])
        problems += said
    return kept, problems


def _bindings_named(keys: dict[str, Any]) -> tuple[dict[str, str], list[str]]:
    """`[keys]` entries whose value names a key ("f9", "ctrl+g"); each other one said, the rest still bound. The
    tool-call dialog's Run key is bound to nothing else: an entry that names it is said and not bound."""
    from tui.app.actions import RUN_TOOL_KEY
    named = {k: v for k, v in keys.items() if isinstance(v, str) and RUN_TOOL_KEY not in _key_names(v)}
    return named, [f"config.toml [keys]: {one_line(k, 60)} = {shown_value(v)}: expected a key such as \"f9\" "
                   "(not bound)" for k, v in keys.items() if not isinstance(v, str)] + [
        f"config.toml [keys]: {one_line(k, 60)} = {shown_value(v)}: {RUN_TOOL_KEY} is the tool-call dialog's Run "
        "command, kept for it alone (not bound)" for k, v in keys.items()
        if isinstance(v, str) and RUN_TOOL_KEY in _key_names(v)]


def _key_names(value: str) -> set[str]:
    """The keys a [keys] value binds ("f8,ctrl+comma": two)."""
    return {name.strip().lower() for name in value.split(",")}


def unknown_bindings(config: dict[str, Any], key_ids: Iterable[str] | None) -> list[str]:
    """A line for each `[keys]` entry that names no binding id, with the closest one."""
    problems: list[str] = []
    if key_ids is not None:
        known = set(key_ids)
        problems += [unknown_key_line(key, "[keys] (binding ids)", known) for key in config.get("keys", {})
                     if key not in known]
    return problems


def resolve(flags: dict, environ: dict | None = None, config_path: Path | None = None,
            key_ids: Iterable[str] | None = None) -> tuple[Settings, list[str]]:
    """Flags win over the environment, which wins over the config file. `key_ids`: the binding ids [keys] may
    remap (None: not checked)."""
    environ = os.environ if environ is None else environ
    problems: list[str] = []
    try:
        config, problems = checked_config(read_config(config_path or config_dir() / "config.toml"))
    except ConfigError as exc:
        config, problems = {}, [str(exc)]
    problems += unknown_bindings(config, key_ids)
    known_ids = set(key_ids) if key_ids is not None else None
    settings = Settings(policy=dict(config.get("policy", {})), params=dict(config.get("params", {})),
                        extra_params=dict(config.get("extra_params", {})),
                        keys={k: str(v) for k, v in config.get("keys", {}).items()
                              if known_ids is None or k in known_ids},
                        scan_local=config.get("scan_local", True))
    env_names = {"base_url": "OPENAI_BASE_URL", "model": "OPENAI_MODEL"}
    for name in TEXT_KEYS:
        if flags.get(name):
            setattr(settings, name, flags[name])
            settings.source[name] = "flag"
        elif name in env_names and environ.get(env_names[name]):
            setattr(settings, name, environ[env_names[name]])
            settings.source[name] = f"${env_names[name]}"
        elif config.get(name):
            setattr(settings, name, str(config[name]))
            settings.source[name] = "config.toml"
    if flags.get("no_scan"):
        settings.scan_local = False
    if settings.provider_count and settings.provider_count not in ("openai", "anthropic", "gemini"):
        problems.append(f"config.toml: provider_count must be openai, anthropic or gemini, not "
                        f"{settings.provider_count[:40]!r}: no provider count is asked")
        settings.provider_count = ""
    if settings.api and settings.api not in API_KINDS:
        problems.append(f"config.toml: api must be chat, responses or messages, not {settings.api[:40]!r}: chat "
                        "completions are used")
        settings.api = ""
    return settings, problems


API_KINDS = ("chat", "responses", "messages")
