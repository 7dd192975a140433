"""What a tokenizer or a template is, as data: its family, where it came from, and its content's hash.

Whether counts are exact is decided from this identity, never from a name: a tokenizer is the model's
own when the server counts (source "server"), or when its vocabulary's hash is the one the model
registry (registry.py) lists for the model's family. A file named like a shipped tokenizer but with
other content is not the family's; the shipped tokenizer's content under another name is.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

class IdentitySource(StrEnum):
    """Where a tokenizer (or template) came from: what its counts can claim follows from it."""

    SERVER = "server"  # the server counts: its own, exact by definition
    MODEL_FILE = "model file"  # a file the user named (tokenizer.json, a .jinja)
    SHIPPED = "shipped"  # one that ships with ctxpane
    ESTIMATE = "estimate"  # a stand-in: counts are estimates


SERVER, MODEL_FILE, SHIPPED = IdentitySource.SERVER, IdentitySource.MODEL_FILE, IdentitySource.SHIPPED
ESTIMATE = IdentitySource.ESTIMATE
SOURCES = tuple(IdentitySource)
NAME_LIMIT = 200  # a display name is cut here: names come from files and servers


@dataclass(frozen=True)
class Identity:
    """A tokenizer's (or template's) identity.

    family: the registry family its content belongs to, or None when unknown.
    source: an IdentitySource. digest: sha256 (hex) of its vocabulary (a template: of its text), if known.
    name: for display only; nothing is decided from it.
    """

    family: str | None
    source: IdentitySource
    digest: str | None
    name: str

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ValueError(f"unknown identity source {self.source!r}")
        object.__setattr__(self, "source", IdentitySource(self.source))  # a plain string from a file becomes the kind


def display_name(name: Any) -> str:
    """A bounded, printable stand-in for a name from outside (a server, a session file)."""
    text = name if isinstance(name, str) else ""
    text = "".join(ch if ch.isprintable() else "?" for ch in text[:NAME_LIMIT])
    return text + ("…" if isinstance(name, str) and len(name) > NAME_LIMIT else "")


def estimate(name: Any = "estimate", family: str | None = None) -> Identity:
    return Identity(family, ESTIMATE, None, display_name(name))


def as_estimate(identity: Identity, name: Any) -> Identity:
    """The same vocabulary standing in for another (a local tokenizer while the server is away)."""
    return replace(identity, source=ESTIMATE, name=display_name(name))


def tokenizer_identity(tokenizer: Any) -> Identity:
    """The identity a tokenizer carries; one without (a stand-in, a test double) is an estimate."""
    identity = getattr(tokenizer, "identity", None)
    if isinstance(identity, Identity):
        return identity
    return estimate(getattr(tokenizer, "name", "estimate"))


def template_identity(template: Any) -> Identity:
    """The identity a template carries; one without (a test double) has no family."""
    identity = getattr(template, "identity", None)
    return identity if isinstance(identity, Identity) else estimate(getattr(template, "name", "template"))


def exact_counts(tokenizer: Identity, model_family: str | None, verified: bool | None = None) -> bool:
    """True when the tokenizer is the model's own, so its counts are what the model sees.

    An estimate never is, nor a vocabulary of another family than the template's; the server's own is. `verified` is the caller's check against the
    server (its ids for a probe text equal the local tokenizer's, or not): it overrides the family rule.
    Otherwise a shipped or model-file tokenizer is exact when its vocabulary is the model family's.
    """
    if tokenizer.source == ESTIMATE:
        return False
    if tokenizer.family is not None and model_family is not None and tokenizer.family != model_family:
        return False  # another family's vocabulary (llama3's template counted with qwen3's), whoever vouched
    if tokenizer.source == SERVER:
        return True
    if verified is not None:
        return verified
    return tokenizer.family is not None and tokenizer.family == model_family
