"""Taking secrets out of data: on decoded values, where secrets are carried, never in what people wrote.

Two rules, both on values, never on serialized text (replacing text inside JSON breaks the JSON when the
secret is JSON syntax, and misses the secret when JSON escapes it):
- **Where a secret is carried** (a credential header, a credential query parameter or body field, a URL's
  password), the whole value is `***`, whatever it is: a key of one character, a key equal to `"role"`.
  Whether a name carries one is a rule on its words (`credential_name`), not a list of five names.
- **In free text that is not anybody's words** (a server's error message, the raw bytes of a stream), a
  known secret is searched for and replaced, and so is a cut-off start of it; but only a secret that looks
  like one (`searchable`): a placeholder key such as `anything` or `sk-1234` would otherwise rewrite every
  occurrence of an ordinary word. Messages, replies, reasoning and tool calls are never searched at all:
  what the user and the model wrote is kept as written.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Iterable

MASK = "***"
MIN_SEARCHED = 16  # characters a secret needs before free text is searched for it
ALWAYS_SEARCHED = 32  # from this length any value counts as secret-shaped
MIN_PREFIX = 10  # a cut-off start of a searched secret this long is masked too (past a prefix such as "sk-proj-")
# Names that carry a credential, as a rule rather than a list: normalised (lower case, `-` as `_`), a name is a
# credential when one of its words says so (`x-litellm-api-key`, `X-Amz-Security-Token`, `session_token`).
_CREDENTIAL_WORDS = re.compile(
    r"(?:^|_)(?:api_?key|apikey|key|token|secret|password|passwd|auth|authorization|credential|credentials|"
    r"signature|sig|cookie)(?:_|$)")
_NOT_CREDENTIALS = frozenset({"max_tokens", "max_completion_tokens", "max_output_tokens", "total_tokens",
                              "prompt_tokens", "completion_tokens", "input_tokens", "output_tokens",
                              "cached_tokens", "n_tokens", "num_tokens", "top_k", "key_env", "session_id",
                              "prompt_cache_key", "cache_key", "idempotency_key", "thinking_tokens",
                              "budget_tokens", "reasoning_tokens", "token_count", "tokens"})


def normalised(name: str) -> str:
    return name.strip().lower().replace("-", "_")


def credential_name(name: str) -> bool:
    """Does a header, query parameter or field of this name carry a credential?"""
    name = normalised(name)
    if name in _NOT_CREDENTIALS or name.endswith(("_tokens", "_count")):
        return False
    return bool(_CREDENTIAL_WORDS.search(name))


def searchable(secret: str) -> bool:
    """Does `secret` look like a secret, so that free text may be searched for it without touching words?

    Long enough, and not a word: at least two kinds of character (lower, upper, digit, other), or very long."""
    if len(secret) >= ALWAYS_SEARCHED:
        return True
    if len(secret) < MIN_SEARCHED or any(char.isspace() for char in secret):
        return False
    kinds = (any(c.islower() for c in secret), any(c.isupper() for c in secret),
             any(c.isdigit() for c in secret), any(not c.isalnum() for c in secret))
    return sum(kinds) >= 2


class Redactor:
    """The secrets of one recording or session, and how to take them out of values."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        found = {secret for secret in secrets if isinstance(secret, str) and secret}
        self.searched = sorted((s for s in found if searchable(s)), key=len, reverse=True)
        self.unsearched = sorted(found.difference(self.searched))  # too short or too plain to look for in text

    def text(self, text: str) -> str:
        """Free text that is nobody's words (a server error, raw stream bytes): every searched secret, and every
        cut-off start of one (MIN_PREFIX characters or more), as `***`."""
        if not text or not self.searched:
            return text
        for secret in self.searched:
            text = _mask_with_prefixes(text, secret)
        return text

    def value(self, value: Any, skip: Callable[[tuple], bool] = lambda path: False, by_name: bool = False,
              path: tuple = ()) -> Any:
        """A copy of a decoded JSON value with the secrets out of its strings (`text`); with `by_name`, a
        credential-named field's string is `***` whatever it holds. Subtrees where `skip(path)` (people's words)
        are kept as they are."""
        if skip(path):
            return value
        if isinstance(value, dict):
            return {key: (MASK if by_name and isinstance(item, str) and isinstance(key, str) and credential_name(key)
                          else self.value(item, skip, by_name, path + (key,))) for key, item in value.items()}
        if isinstance(value, list):
            return [self.value(item, skip, by_name, path + (index,)) for index, item in enumerate(value)]
        if isinstance(value, str):
            return self.text(value)
        return value


def _mask_with_prefixes(text: str, secret: str) -> str:
    text = text.replace(secret, MASK)
    head = secret[:MIN_PREFIX]
    if head not in text:
        return text
    out, start = [], 0
    while (found := text.find(head, start)) != -1:
        end = found + len(head)
        while end < len(text) and end - found < len(secret) and text[end] == secret[end - found]:
            end += 1
        out += [text[start:found], MASK]
        start = end
    return "".join(out) + text[start:]


_BEARER = re.compile(r"(Bearer\s+)[A-Za-z0-9._~+/\-]{12,}=*")


def bearer_tokens_masked(text: str) -> str:
    """A server's error text with any `Bearer <token>` masked, known or not (an upstream that quotes the
    Authorization header it was sent). Only for error texts: never for anybody's words."""
    return _BEARER.sub(rf"\1{MASK}", text) if "Bearer" in text else text


def redact_url(url: str) -> str:
    """A URL as it may be kept or shown: a password in it, and each credential query parameter's value, `***`."""
    from urllib.parse import unquote_plus

    scheme, sep, rest = url.partition("://")
    if sep:
        authority, slash, tail = rest.partition("/")
        user, at, host = authority.rpartition("@")
        if at and ":" in user:
            authority = f"{user.split(':', 1)[0]}:{MASK}@{host}"
        url = f"{scheme}{sep}{authority}{slash}{tail}"
    base, mark, query = url.partition("?")
    if not mark:
        return url
    query, hash_mark, fragment = query.partition("#")
    pairs = []
    for pair in re.split(r"([&;])", query):
        name, equals, value = pair.partition("=")
        pairs.append(f"{name}={MASK}" if equals and value and credential_name(unquote_plus(name)) else pair)
    return f"{base}?{''.join(pairs)}{hash_mark}{fragment}"
