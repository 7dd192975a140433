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
import unicodedata
from typing import Any, Callable, Iterable, TypeAlias

MASK = "***"
JSONPath: TypeAlias = tuple[object, ...]  # the keys and list indexes from a value's root down to one of its parts
MIN_SEARCHED = 16  # characters a secret needs before free text is searched for it
ALWAYS_SEARCHED = 32  # from this length any value counts as secret-shaped
MIN_PREFIX = 10  # a cut-off start of a searched secret this long is masked too (past a prefix such as "sk-proj-")
PLAIN_KEY = 12  # a key too plain to search for in text is still masked where it stands whole, from this length
# Names that carry a credential, as a rule rather than a list: a name is cut into words (`x-litellm-api-key`,
# `X-Amz-Security-Token`, `accessToken`, `api_key2`) and is a credential when one of them says so.
_CREDENTIAL_WORDS = frozenset({"apikey", "key", "token", "secret", "password", "passwd", "passphrase", "pwd",
                               "auth", "authorization", "credential", "credentials", "signature", "sig", "cookie",
                               "jwt", "bearer"})
# ...unless it names a count, a kind or a place of such a thing, or a tokenizer's own tokens
_NOT_LAST = frozenset({"tokens", "count", "method", "type", "version", "mode", "scheme", "url", "uri", "endpoint",
                       "name", "id", "env", "header", "format", "kind", "len", "length", "limit", "budget"})
_NOT_AFTER = frozenset({"max", "eos", "bos", "pad", "unk", "sep", "cls", "mask", "cache", "prompt_cache",
                        "idempotency", "partition", "sort", "primary", "foreign", "hot", "top"})
_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
KEY_SHAPES = re.compile(r"^(?:(?:bearer|basic|token|digest|aws4-hmac-sha256)\s+\S{8,}|sk-[A-Za-z0-9_\-]{8,}|"
                        r"sk-ant-\S{8,}|xox[abprs]-\S{8,}|gh[pousr]_[A-Za-z0-9]{20,}|AIza[0-9A-Za-z_\-]{30,}|"
                        r"eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,})$", re.IGNORECASE)


def name_words(name: str) -> list[str]:
    """`X-Amz-Security-Token` -> x, amz, security, token; `accessToken` -> access, token; `api_key2` -> api, key."""
    words = [word.lower() for word in _WORD.findall(name) if not word.isdigit()]
    joined: list[str] = []
    for word in words:  # "api" "key" is one word, as "apikey" is
        if word == "key" and joined and joined[-1] == "api":
            joined[-1] = "apikey"
        else:
            joined.append(word)
    return joined


def credential_name(name: str) -> bool:
    """Does a header, query parameter or field of this name carry a credential?"""
    words = name_words(name)
    if not words or words[-1] in _NOT_LAST:
        return False
    for at, word in enumerate(words):
        if word in _CREDENTIAL_WORDS and not (at and words[at - 1] in _NOT_AFTER) and not (
                at > 1 and "_".join(words[at - 2:at]) in _NOT_AFTER):
            return True
    return False


def key_shaped(value: str) -> bool:
    """Does a value look like a credential whatever its name (`Bearer …`, `sk-…`, a JWT)?"""
    return len(value) < 4096 and bool(KEY_SHAPES.match(value.strip()))


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

    def __init__(self, secrets: Iterable[object] = ()) -> None:
        # read from settings and files: anything but a non-empty string is no secret
        found = {secret for secret in secrets if isinstance(secret, str) and secret}
        self.searched = sorted((s for s in found if searchable(s)), key=len, reverse=True)
        self.unsearched = sorted(found.difference(self.searched))  # too short or too plain to look for in text
        # raw JSON text (a stream's bytes) may carry a secret escaped: `\u00e9`, `\/`, `\"`
        self._forms = sorted({form for secret in self.searched for form in _escaped_forms(secret)}, key=len,
                             reverse=True)

    def text(self, text: str) -> str:
        """Free text that is nobody's words (a server error, raw stream bytes): every searched secret, as written
        or JSON-escaped, and every cut-off start of one (MIN_PREFIX characters or more), as `***`."""
        if not text or not self._forms:
            return text
        for form in self._forms:
            text = _mask_with_prefixes(text, form)
        return text

    def value(self, value: Any, skip: Callable[[JSONPath], bool] = lambda path: False, by_name: bool = False,
              path: JSONPath = ()) -> Any:
        """A copy of a decoded JSON value with the secrets out of its strings (`text`). With `by_name`, what a
        credential-named field holds (a string, a list, an object) is `***`, and so is a string shaped like a key
        (`Bearer …`, `sk-…`). Subtrees where `skip(path)` (people's words) are kept as they are."""
        if skip(path):
            return value
        if isinstance(value, dict):
            return {key: (MASK if by_name and isinstance(key, str) and credential_name(key) and _holds(item)
                          else self.value(item, skip, by_name, path + (key,))) for key, item in value.items()}
        if isinstance(value, list):
            return [self.value(item, skip, by_name, path + (index,)) for index, item in enumerate(value)]
        if isinstance(value, str):
            return MASK if by_name and key_shaped(value) else self.text(value)
        return value


def _holds(item: Any) -> bool:
    """Anything but a number, a flag or nothing: `api_key: [K]` and `auth: {bearer: K}` hold a key too."""
    return isinstance(item, (str, list, dict))


def _escaped_forms(secret: str) -> set[str]:
    import json

    forms = {secret}
    for ascii_only in (True, False):
        escaped = json.dumps(secret, ensure_ascii=ascii_only)[1:-1]
        forms.update({escaped, escaped.replace("/", "\\/")})
    return forms


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
        if at:  # a password, or a token standing as the user name (https://TOKEN@host)
            authority = f"{user.split(':', 1)[0]}:{MASK}@{host}" if ":" in user else f"{MASK}@{host}"
        url = f"{scheme}{sep}{authority}{slash}{tail}"
    base, mark, query = url.partition("?")
    if not mark:
        return url
    query, hash_mark, fragment = query.partition("#")
    pairs = []
    for pair in re.split(r"([&;])", query):
        name, equals, value = pair.partition("=")
        secret = equals and value and (credential_name(unquote_plus(name)) or key_shaped(unquote_plus(value)))
        pairs.append(f"{name}={MASK}" if secret else pair)
    return f"{base}?{''.join(pairs)}{hash_mark}{fragment}"


def known_secrets_masked(text: str, secrets: Iterable[str]) -> str:
    """Text that must hold no key (a command's output, a prompt kept in the history): each key as written,
    JSON-escaped, or cut off at its start, as `***` (Redactor.text); a key too plain for it to search free text
    for, replaced where it stands whole; and any fragment of a key's secret part long enough to matter, however
    it was folded or encoded (fragments_masked)."""
    secrets = [secret for secret in secrets if not secret.startswith(("/", "~"))]  # a key's place is no key
    redactor = Redactor(secrets)
    text = redactor.text(text)
    for secret in redactor.unsearched:
        if _worth_masking(secret):  # a placeholder such as "x" or "anything" would mask ordinary words
            text = text.replace(secret, MASK)
    return fragments_masked(text, redactor.searched)


def _worth_masking(secret: str) -> bool:
    """Long enough, or short and not a word: a local server's `--api-key localkey99` is a key, "anything" is not."""
    return len(secret) >= PLAIN_KEY or (len(secret) >= 8 and any(c.isdigit() for c in secret)
                                        and any(c.isalpha() for c in secret))


FRAGMENT = 8  # characters of a key's secret part that, found in a command's output, are taken for a leak of it
_PUBLIC_PREFIX = re.compile(r"^(?:sk-(?:proj-|ant-(?:api\d+-)?|svcacct-|admin-)?|xox[abprs]-|gh[pousr]_|AIza)")


def fragments_masked(text: str, secrets: Iterable[str], run: int = FRAGMENT) -> str:
    """Output a hostile program wrote, with every run of `run` or more characters of a secret's secret part masked,
    also where the run is folded over lines or spaced out, reversed, in hex or in base64. For a command's output
    only: it would mask ordinary text that happens to share a run with a key. A key shorter than `run` is left
    to `Redactor`."""
    grams = _fragment_grams(secrets, run)
    if not grams or not text:
        return text
    kept = [at for at, char in enumerate(text) if not _spacing(char)]  # where each non-space character stands
    compact = "".join(text[at] for at in kept)
    hidden = bytearray(len(text))
    for size, forms in grams.items():
        for start in range(len(compact) - size + 1):
            if compact[start:start + size] in forms:
                for at in range(kept[start], kept[start + size - 1] + 1):
                    hidden[at] = 1
    return _runs_masked(text, hidden)


def _spacing(char: str) -> bool:
    """A space, or an invisible format character (a zero-width space, a joiner) that may be put between pieces."""
    return char.isspace() or unicodedata.category(char) == "Cf"


def _fragment_grams(secrets: Iterable[str], run: int) -> dict[int, set[str]]:
    """Every substring of `run` characters of each form a leaked key may take (hex: twice as many)."""
    import base64

    grams: dict[int, set[str]] = {}
    for secret in secrets:
        body = _PUBLIC_PREFIX.sub("", secret)
        if len(body) < run:
            continue
        raw = secret.encode()
        texts = [body, body[::-1]]
        for skip in range(3):  # base64 of the key read from any of three byte offsets
            whole = raw[skip:][:len(raw[skip:]) - len(raw[skip:]) % 3]  # a last partial group depends on what follows
            for encode in (base64.b64encode, base64.urlsafe_b64encode):
                texts.append(encode(whole).decode())
        for form in texts:
            grams.setdefault(run, set()).update(form[at:at + run] for at in range(len(form) - run + 1))
        for form in (raw.hex(), raw.hex().upper()):
            grams.setdefault(2 * run, set()).update(form[at:at + 2 * run] for at in range(len(form) - 2 * run + 1))
    return grams


def _runs_masked(text: str, hidden: bytearray) -> str:
    out, at = [], 0
    while at < len(text):
        if not hidden[at]:
            out.append(text[at])
            at += 1
            continue
        while at < len(text) and hidden[at]:
            at += 1
        out.append(MASK)
    return "".join(out)
