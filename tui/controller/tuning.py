"""Settings changed where the user is (the settings screen, the palette), and the link kept alive.

Transitions of the Controller, kept out of controller.py: a form of texts is checked field by field
(one line per error, nothing applied unless all pass), then applied to the session's policy and
params (saved with the session) or to the endpoint (connecting again). New sessions take
config.toml's `[policy]` and `[params]` and, when a server is connected, its template and window.
A server that is down is tried again with a growing pause; a message sent while connecting waits
for the connection instead of being refused as offline.
"""

from __future__ import annotations

import re
from enum import StrEnum
from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from tui.context.policy.truncation import POLICIES, PolicyError, PolicySettings
from tui.errors import unknown_key_line
from tui.sessions.model import Session

from tui.controller.config_params import SAMPLING_PARAMS, checked_params
from tui.controller.titling import announce, name_if_untitled
from tui.controller.events import Severity, Tone

if TYPE_CHECKING:
    from tui.controller.parts import Parts, Settings
    from tui.controller.runtime import Handle

RETRY_FIRST, RETRY_MOST = 2.0, 60.0  # seconds between tries to reach a server that is down
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


class FieldPlace(StrEnum):
    """Where a settings field goes: the session's policy, its sampling params, or the endpoint."""

    POLICY = "policy"
    PARAMS = "params"
    ENDPOINT = "endpoint"


@dataclass(frozen=True)
class Field:
    key: str
    label: str
    where: FieldPlace
    kind: type[int] | type[float] | None  # int, float, or None for text
    low: float | None = None
    high: float | None = None
    hint: str = ""


FIELDS = (
    Field("context_window", "Context window", FieldPlace.POLICY, int, 16, 10_000_000,
          "tokens; empty: unknown, nothing dropped"),
    Field("max_tokens", "Max tokens (reply)", FieldPlace.POLICY, int, 0, 1_000_000, "reserved for the reply; 0: none"),
    Field("name", "Truncation policy", FieldPlace.POLICY, None, hint=" | ".join(POLICIES)),
    Field("keep_last", "Keep last N turns", FieldPlace.POLICY, int, 1, 100_000, "for keep-last-n"),
    Field("trim_over", "Trim items over", FieldPlace.POLICY, int, 20, 1_000_000,
          "tokens; for curated: a longer item keeps only its lines relevant to the question"),
    Field("temperature", "Temperature", FieldPlace.PARAMS, float, 0, 5, "empty: the server's default"),
    Field("top_p", "top_p", FieldPlace.PARAMS, float, 0, 1),
    Field("top_k", "top_k", FieldPlace.PARAMS, int, 0, 100_000),
    Field("min_p", "min_p", FieldPlace.PARAMS, float, 0, 1),
    Field("presence_penalty", "Presence penalty", FieldPlace.PARAMS, float, -2, 2),
    Field("frequency_penalty", "Frequency penalty", FieldPlace.PARAMS, float, -2, 2),
    Field("seed", "Seed", FieldPlace.PARAMS, int, -1, 2**63 - 1, "empty: random"),
    Field("base_url", "Endpoint (base URL)", FieldPlace.ENDPOINT, None, hint="e.g. http://127.0.0.1:8080/v1"),
    Field("api_key_env", "API key variable", FieldPlace.ENDPOINT, None, hint="the variable's name, never the key"),
    Field("api", "API", FieldPlace.ENDPOINT, None, hint="chat | responses | messages (Anthropic)"),
)
POLICY_KEYS = {f.name for f in fields(PolicySettings)} - {"summary", "summary_cost", "summary_of"}
PARAM_KEYS = {f.key for f in FIELDS if f.where is FieldPlace.PARAMS}
assert PARAM_KEYS <= SAMPLING_PARAMS  # the settings screen's fields are among what config.toml may send


def _number(field: Field, kind: type[int] | type[float], text: str) -> tuple[Any, str]:
    """`text` as a number of `kind` (the field's) within the field's bounds, or None and why not."""
    try:
        value = kind(text)
    except ValueError:
        return None, f"{field.label}: {text[:40]!r} is not {'a whole number' if kind is int else 'a number'}"
    if value != value or (field.low is not None and value < field.low) or \
            (field.high is not None and value > field.high):
        return None, f"{field.label}: must be from {field.low:g} to {field.high:g}"
    return value, ""


def check(form: dict[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    """The form's texts as values (None: cleared), and one line per field that is wrong."""
    values: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for field in FIELDS:
        if field.key not in form:
            continue
        text = form[field.key].strip()
        if field.kind is not None:
            values[field.key], error = _number(field, field.kind, text) if text else (None, "")
        else:
            values[field.key], error = text, _text_error(field, text)
        if error:
            errors[field.key] = error
    if values.get("max_tokens") and values.get("context_window") and values["max_tokens"] >= values["context_window"]:
        errors["max_tokens"] = "Max tokens: must be less than the context window (it is taken from it)"
    return values, errors


def _text_error(field: Field, text: str) -> str:
    if field.key == "name" and text not in POLICIES:
        return f"{field.label}: one of {', '.join(POLICIES)}"
    if field.key == "api_key_env" and not ENV_NAME.fullmatch(text):
        return f"{field.label}: a variable name (letters, digits, _), e.g. OPENAI_API_KEY"
    if field.key == "api" and text and text not in ("chat", "responses", "messages"):
        return f"{field.label}: chat, responses or messages"
    if field.key == "base_url" and text and not re.match(r"https?://[^\s]+$", text):
        return f"{field.label}: an http:// or https:// URL"
    return ""


def config_defaults(settings: Settings) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """config.toml's `[policy]` and `[params]` as a new session takes them, and what was wrong in them."""
    problems: list[str] = []
    policy = {k: v for k, v in dict(getattr(settings, "policy", {}) or {}).items() if k in POLICY_KEYS}
    for key in sorted(set(getattr(settings, "policy", {}) or {}) - POLICY_KEYS, key=str):
        problems.append("config.toml: " + unknown_key_line(key, "[policy]", POLICY_KEYS))
    try:
        PolicySettings(**policy)
    except (PolicyError, TypeError) as exc:
        problems.append(f"config.toml [policy]: {exc} (defaults used)")
        policy = {}
    params = {}
    wanted, said = checked_params(dict(getattr(settings, "params", {}) or {}))  # what is said is never sent
    problems += said
    wanted |= dict(getattr(settings, "extra_params", {}) or {})  # sent as written: the user said so
    for key, value in wanted.items():
        if _sendable(value):
            params[key] = value
        else:  # NaN, infinity or a TOML date cannot go into a JSON body: it would fail every request
            problems.append(f"config.toml [params]: {key} = {str(value)[:40]} is not a JSON value (ignored)")
    return policy, params, problems


def _sendable(value: Any) -> bool:
    """A value a JSON body can carry: finite numbers, strings, flags, null, and lists and tables of them."""
    import json
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return False
    return True


class Tuning:
    """`connect`: connect again (the controller's, with its hooks); `start_send`: send what waits in the session."""

    def __init__(self, parts: Parts, connect: Callable[[], None], start_send: Callable[[], None]) -> None:
        self.parts, self._connect_again, self._start_send = parts, connect, start_send
        self.connecting = False  # a connection is on its way: a message sent now waits for it
        self.waiting = False  # a message was sent while connecting: it goes once connected
        self._retry: Handle | None = None
        self._pause = RETRY_FIRST
        self._said: set[str] = set()  # config problems already said once

    # -- the form ---------------------------------------------------------------------------------
    def values(self) -> dict[str, str]:
        """What the settings screen shows: the session's policy and params, the endpoint, as texts."""
        parts = self.parts
        policy, params = asdict(parts.wb.policy), parts.wb.session.params
        shown: dict[str, str] = {}
        for field in FIELDS:
            if field.where is FieldPlace.POLICY:
                value = policy.get(field.key)
            elif field.where is FieldPlace.PARAMS:
                value = params.get(field.key)
            elif field.key == "base_url":
                value = parts.link.url(parts.wb.session.base_url)
            elif field.key == "api":
                value = getattr(parts.settings, "api", "") or "chat"
            else:
                value = parts.settings.api_key_env
            shown[field.key] = "" if value is None else str(value)
        return shown

    def apply(self, form: dict[str, str]) -> dict[str, str]:
        """Check the form and, if all of it is right, apply it. Returns the errors (none: applied)."""
        values, errors = check(form)
        if errors or self.parts.read_only:
            return errors or {"": "this session is read-only"}
        parts, wb = self.parts, self.parts.wb
        before = parts.history.settings_before("policy", "params")
        policy = {f.key: values[f.key] for f in FIELDS if f.where is FieldPlace.POLICY and f.key in values}
        policy = {k: v for k, v in policy.items() if v is not None or k == "context_window"}
        try:
            wb.set_policy(**policy)
        except PolicyError as exc:
            return {"": str(exc)}
        for key in PARAM_KEYS & values.keys():
            if values[key] is None:
                wb.session.params.pop(key, None)
            else:
                wb.session.params[key] = values[key]
        parts.history.settings_changed("settings", before)
        endpoint_changed = self._endpoint(values)
        parts.changed()
        parts.notify("settings applied" + (": connecting again" if endpoint_changed else ""))
        if endpoint_changed:
            self.reconnect()
        return {}

    def _endpoint(self, values: dict[str, Any]) -> bool:
        """A URL or key variable typed here is the user's own (as a flag would be): the key may go there."""
        parts, changed = self.parts, False
        url = values.get("base_url")
        if url and url.rstrip("/") != parts.link.url(parts.wb.session.base_url).rstrip("/"):
            parts.settings.base_url = url
            parts.settings.source["base_url"] = "user"
            parts.wb.session.base_url = url
            changed = True
        api = values.get("api")
        if api and api != (getattr(parts.settings, "api", "") or "chat"):
            parts.settings.api = api
            changed = True
        env = values.get("api_key_env")
        if env and env != parts.settings.api_key_env:
            parts.settings.api_key_env = parts.file.api_key_env = env  # the new variable's key is kept out of files too
            changed = True
        return changed

    # -- new sessions -------------------------------------------------------------------------------
    def fresh_session(self) -> Session:
        """A new session: the endpoint, config.toml's policy and params, and the server's window."""
        parts = self.parts
        policy, params, problems = config_defaults(parts.settings)
        for problem in problems:
            if problem not in self._said:
                self._said.add(problem)
                parts.notify(problem, severity=Severity.WARNING, timeout=10)
        session = Session(base_url=parts.wb.session.base_url, model=parts.wb.session.model, params=params)
        connection = parts.link.connection
        if connection is not None and connection.info.n_ctx and "context_window" not in policy:
            policy["context_window"] = int(connection.info.n_ctx)
        session.policy = asdict(PolicySettings(**policy))
        return session

    def keep_server_template(self, exact: bool | None, cache_rule: str) -> None:
        """After a new session is adopted: the server's template and counting stay what they were."""
        parts = self.parts
        connection = parts.link.connection
        if parts.client is None or connection is None:
            return
        if connection.template is not None and not parts.settings.template:
            parts.wb.set_template(connection.template)
        parts.wb.exact, parts.wb.cache_rule = exact, cache_rule
        parts.changed(save=False)

    # -- connecting ---------------------------------------------------------------------------------
    def connect(self, job: Callable[[], Awaitable[None]]) -> None:
        """Connect now (the job is connecting.connect); a retry waiting is dropped."""
        self._cancel_retry()
        self.connecting = True
        self.parts.runtime.spawn(lambda: self._connect(job), "connect")

    async def _connect(self, job: Callable[[], Awaitable[None]]) -> None:
        try:
            await job()
        finally:
            self.connecting = False
        if self.parts.client is not None:
            self._pause = RETRY_FIRST
            self._send_waiting()
        elif self.waiting:
            self.parts.status("offline: your message is kept and goes once the server answers "
                            "(palette: Reconnect)", Tone.CAUTION)

    def reconnect(self) -> None:
        """Drop the link and connect again (the endpoint may have changed)."""
        parts = self.parts
        if parts.streaming:
            parts.notify("a reply is streaming: stop it (Esc) before reconnecting", severity=Severity.WARNING)
            return
        old = parts.link.client
        parts.link.client = parts.link.connection = None
        if old is not None:
            parts.runtime.spawn(old.aclose, "close-client")
        self._pause = RETRY_FIRST
        self._connect_again()

    def offline(self, text: str, retry: bool = True) -> None:
        """Connecting failed: say so, and try again after a pause that grows (the server may come back).

        `retry` False (a key refused or missing): trying again changes nothing, so only say it."""
        parts = self.parts
        self._cancel_retry()
        if not retry:
            parts.status(f"{text} (palette: Reconnect)", Tone.BAD)
            return
        pause = self._pause
        self._pause = min(self._pause * 2, RETRY_MOST)
        self._retry = parts.runtime.later(pause, self._connect_again)
        parts.status(f"{text} · trying again in {pause:g}s (palette: Reconnect)", Tone.BAD)

    def _cancel_retry(self) -> None:
        if self._retry is not None:
            self._retry.cancel()
            self._retry = None

    # -- a template picked while the server renders its own -------------------------------------------------
    def what_if(self) -> str:
        """'' unless the server renders its own template and another is picked: then what that means."""
        parts = self.parts
        connection = parts.link.connection
        if parts.client is None or connection is None or connection.template is None:
            return ""
        if (parts.wb.template.source or "") == (connection.template.source or ""):
            return ""
        return (f"what-if: counted with {parts.wb.template.name}; the server renders the messages with its own "
                "template, so it will count and cache differently")

    def assumed(self) -> str:
        """'' unless the server's template is unseen (a gateway, a hosted API): then whichever template is in use
        is assumed, and this says which and where that was learned (a reopened session or a pick keeps its own)."""
        connection = self.parts.link.connection
        if self.parts.client is None or connection is None or connection.assumed is None:
            return ""
        template, guess = self.parts.wb.template, connection.assumed
        if (template.source, template.defaults) == (guess.source, guess.defaults):
            return connection.assumption
        hidden = "the gateway hides the server's" if connection.info.gateway else "the server does not show its own"
        return f"template assumed: {template.name}, as chosen ({hidden})"

    def say_what_if(self) -> None:
        note = self.what_if()
        if note:
            self.parts.status(note, Tone.ASIDE)

    # -- a message sent while connecting ----------------------------------------------------------------
    def may_wait(self) -> bool:
        """True when a server is on its way (connecting, or tried again soon): a send waits for it."""
        if self._retry is not None and not self.connecting:
            self._connect_again()  # the user wants to send: try now rather than after the pause
        return self.connecting

    def wait_to_send(self, text: str) -> bool:
        """Sent before the connection is up: kept, and sent once it is. False when one already waits."""
        parts = self.parts
        if self.waiting:
            parts.notify("still connecting: your last message is waiting to be sent", severity=Severity.WARNING)
            return False
        parts.wb.commit_text(text)
        if name_if_untitled(parts.wb.session):  # named at once, as a message sent at once is
            announce(parts)
        self.waiting = True
        parts.changed()
        parts.status("connecting… your message is sent once the server answers", Tone.CAUTION)
        return True

    def _send_waiting(self) -> None:
        parts = self.parts
        if not self.waiting:
            return
        self.waiting = False
        messages = parts.wb.session.messages
        if not parts.streaming and messages and messages[-1].role == "user":
            self._start_send()
