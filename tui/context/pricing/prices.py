"""The price table: US dollars per million tokens for input, cached input, cache writes and output.

A table is TOML (tui/context/prices.toml ships with ctxpane; a prices.toml in the config folder adds
or replaces models). It is text from outside like any other: bounded (size, number of models, name
lengths, prices), every key known, and a problem is one line naming the file and the field. Prices
are kept as Decimal, so sums of small figures stay exact.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Annotated, Any, TypedDict

import msgspec
from msgspec import Meta, Struct

from tui.context.untrusted.outside_files import FileProblem, parse_toml
from tui.context.untrusted.visible import visible

MAX_BYTES = 256 * 1024
MAX_MODELS = 2_000
MAX_PRICE = 10_000.0  # dollars per million tokens: far above any published price
Price = Annotated[float, Meta(ge=0, le=MAX_PRICE)]
Name = Annotated[str, Meta(min_length=1, max_length=200)]
_DATED = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8})$")  # gpt-4o-2024-08-06, claude-sonnet-4-5-20250929


class PriceTableError(ValueError):
    """A price table that cannot be used: one line naming the file and the field, safe to print."""

    def __init__(self, message: str):
        super().__init__(visible(" ".join(message.split())))  # names from the file may hold anything


class ModelIn(Struct, forbid_unknown_fields=True):
    input: Price
    output: Price
    cached_input: Price | None = None  # None: no discount for cached input
    cache_write: Price | None = None  # None: writing the cache costs the input price
    source: Annotated[str, Meta(max_length=1000)] = ""
    aliases: Annotated[list[Name], Meta(max_length=50)] = []


class TableIn(Struct, forbid_unknown_fields=True):
    date: datetime.date
    currency: Annotated[str, Meta(pattern=r"^[A-Z]{3}$")] = "USD"
    models: Annotated[dict[Name, dict[str, Any]], Meta(max_length=MAX_MODELS)] = {}  # each checked as a ModelIn


class PriceRecord(TypedDict):
    """A price as request records carry it: dollars per million tokens."""

    model: str
    input: float
    cached_input: float
    cache_write: float
    output: float
    unit: str
    source: str
    table_date: str
    origin: str


@dataclass(frozen=True)
class ModelPrice:
    model: str
    input: Decimal
    output: Decimal
    cached_input: Decimal
    cache_write: Decimal
    source: str
    table_date: str  # the date of the table the price comes from
    origin: str  # "shipped" or the file it was read from

    def to_dict(self) -> PriceRecord:
        return {"model": self.model, "input": float(self.input), "cached_input": float(self.cached_input),
                "cache_write": float(self.cache_write), "output": float(self.output), "unit": "USD per 1M tokens",
                "source": self.source, "table_date": self.table_date, "origin": self.origin}


@dataclass
class PriceTable:
    models: dict[str, ModelPrice] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)
    origins: list[str] = field(default_factory=list)  # "shipped 2026-12-01", "/home/me/.config/...: 2026-12-05"

    def lookup(self, model: str) -> ModelPrice | None:
        """The price of `model`: its name, an alias, without a provider prefix, without a date suffix."""
        for name in _candidates(model):
            found = self.models.get(name) or self.models.get(self.aliases.get(name, ""))
            if found:
                return found
        return None

    def merged(self, other: "PriceTable") -> "PriceTable":
        """This table with `other`'s models added or replacing ours (a user's file over the shipped one). A name
        `other` gives as an alias is its model's wherever ours named it: as a model (the price of our name is theirs
        then, and so of our aliases of it) or as an alias."""
        models = {**self.models, **other.models}
        for alias, target in other.aliases.items():
            if alias in self.models and alias not in other.models:
                models[alias] = other.models[target]
        return PriceTable(models, {**self.aliases, **other.aliases}, self.origins + other.origins)


def _candidates(model: str) -> list[str]:
    name = (model or "").strip().lower()
    bare = name.rsplit("/", 1)[-1]  # openai/gpt-4o, anthropic/claude-...
    found = [name, bare, _DATED.sub("", bare)]
    return list(dict.fromkeys(n for n in found if n))


def _decimal(value: float | None, fallback: Decimal) -> Decimal:
    return fallback if value is None else Decimal(repr(value))


def _field_line(error: msgspec.ValidationError, prefix: str = "") -> str:
    """msgspec's message as "field `models.x.input`: expected ..." (it names no dict keys: `prefix` does)."""
    text = str(error).replace("`", "")
    missing = re.match(r"Object missing required field (\w+)", text)
    if missing:
        return f"field `{prefix}{missing.group(1)}`: required but missing"
    where = re.search(r" - at \$\.?(\S*)", text)
    reason = re.sub(r" - at \$\S*", "", text)
    path = prefix + (where.group(1) if where else "")
    reason = reason[:1].lower() + reason[1:]
    return f"field `{path.rstrip('.')}`: {reason}" if path else reason


def parse_price_table(text: str | bytes, origin: str) -> PriceTable:
    """A table from TOML text; raises PriceTableError with one line (`origin` names the file)."""
    try:
        data = parse_toml(text, origin, MAX_BYTES)
        table = msgspec.convert(data, TableIn)
    except FileProblem as exc:  # too large, too deep, not TOML: one line
        raise PriceTableError(str(exc)) from None
    except msgspec.ValidationError as exc:
        raise PriceTableError(f"{origin}: {_field_line(exc)[:300]}") from None
    if table.currency != "USD":  # amounts are shown and stored as dollars, and added to the shipped ones
        raise PriceTableError(f"{origin}: field `currency`: {table.currency}: prices must be in USD")
    return _table(table, origin)


def _model(name: str, data: dict[str, Any], origin: str) -> ModelIn:
    try:
        return msgspec.convert(data, ModelIn)
    except msgspec.ValidationError as exc:
        raise PriceTableError(f"{origin}: {_field_line(exc, f'models.{name[:60]}.')[:300]}") from None


def _table(table: TableIn, origin: str) -> PriceTable:
    result = PriceTable(origins=[f"{origin}: {table.date.isoformat()}"])
    for name, data in table.models.items():
        entry = _model(name, data, origin)
        if entry.cached_input is not None and entry.cached_input > entry.input:  # the cache would "save" < 0
            raise PriceTableError(f"{origin}: field `models.{name[:60]}.cached_input`: {entry.cached_input} is "
                                  f"above the input price ({entry.input}); a cache read costs at most that")
        base = Decimal(repr(entry.input))
        key = name.strip().lower()
        if key in result.models or key in result.aliases:  # names match without case: one would win by order
            raise PriceTableError(f"{origin}: models.{name[:60]}: the model {key[:60]!r} is named twice")
        result.models[key] = ModelPrice(name, base, Decimal(repr(entry.output)), _decimal(entry.cached_input, base),
                                        _decimal(entry.cache_write, base), entry.source, table.date.isoformat(),
                                        origin)
        for alias in entry.aliases:
            other = alias.strip().lower()
            if other in result.aliases or other in result.models or other == key:
                raise PriceTableError(f"{origin}: models.{name[:60]}.aliases: {other[:60]!r} is named twice")
            result.aliases[other] = key
    return result
