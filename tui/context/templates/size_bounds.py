"""Upper bounds on what an operation would build, computed before running it.

A template can nest one list in another many times over (`[x, x]` in a loop doubles the text that
`str()` or `tojson` would write, at no cost in memory), so sizes are measured once per distinct object
and counted at every use: linear in the objects, whatever they expand to.
"""

from __future__ import annotations

import re
from string import Formatter
from typing import Any, Callable, NamedTuple, TypeAlias

from jinja2.utils import Namespace

from tui.context.errors import TemplateLimitError
from tui.context.templates.limits import Budget

REPR_FACTOR = 10  # repr() writes a character as at most 10 ("\U000e0001")
JSON_FACTOR = 6  # json.dumps writes a character as at most 6 ("\u0001")
PERCENT_SPEC = re.compile(r"%(?:\(([^)]*)\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?[hlL]?(.)", re.S)
DIGITS = re.compile(r"\d+")
# A method call as the sandbox sees it: the positional and keyword arguments a template passed.
Args: TypeAlias = tuple[Any, ...]
Kwargs: TypeAlias = dict[str, Any]
Sizer: TypeAlias = Callable[[Any, Args, Kwargs], int]  # a bound on a method's result, from its owner and arguments


class Shape(NamedTuple):
    """Characters, elements and nesting depth of a value written out (an upper bound)."""

    chars: int
    elements: int = 0
    depth: int = 0


def keys_size(mapping: dict[Any, Any], factor: int, walk: Callable[[Any], tuple[int, int, int]]) -> int:
    try:
        return factor * sum(map(len, mapping)) + 5 * len(mapping)  # string keys, the usual: no loop here
    except TypeError:
        return sum(walk(key)[0] + 2 for key in mapping)


def measure(value: Any, limit: int, factor: int = REPR_FACTOR) -> Shape:
    """The Shape of `value`; raises TemplateLimitError once it passes `limit` characters.

    Written for speed (tojson runs it on every tool of every render): strings inside a container are
    counted in the loop, only containers recurse. Lists and dicts cannot be changed in the sandbox, so
    a cycle has to pass through a namespace: only those are tracked.
    """
    memo: dict[int, tuple[int, int, int]] = {}
    open_namespaces: set[int] = set()

    def walk(item: Any) -> tuple[int, int, int]:
        kind = type(item)
        if kind is str or isinstance(item, (str, bytes)):
            return factor * len(item) + 3, 0, 0
        if kind is int or kind is bool:
            return item.bit_length() // 3 + 2, 0, 0
        key = id(item)
        if key in memo:
            return memo[key]
        if kind is list or kind is tuple or isinstance(item, (list, tuple, set, frozenset)):
            parts, chars = item, 2
        elif isinstance(item, dict):
            parts, chars = item.values(), 2 + keys_size(item, factor, walk)
        elif isinstance(item, Namespace) and key not in open_namespaces:
            open_namespaces.add(key)
            result = walk(getattr(item, "_Namespace__attrs", {}))  # a namespace writes out its dict
            open_namespaces.discard(key)
            memo[key] = result
            return result
        else:  # None, floats, undefined, a namespace inside itself: short fixed texts
            return 64, 0, 0
        elements, depth = len(parts), 0
        for part in parts:
            if type(part) is str:
                chars += factor * len(part) + 5
            else:
                inner = walk(part)
                chars, elements, depth = chars + inner[0] + 2, elements + inner[1], max(depth, inner[2])
            if chars > limit:
                raise too_long(limit)
        memo[key] = result = (chars, elements, depth + 1)
        return result

    return Shape(*walk(value))


def too_long(limit: int) -> TemplateLimitError:
    return TemplateLimitError("SizeLimit", f"the template built a string of more than {limit:,} characters")


def text_size(value: Any, budget: Budget, as_repr: bool = False) -> int:
    """At most how many characters str(value) (or repr) has."""
    if type(value) is str and not as_repr:
        return len(value)
    return measure(value, budget.limits.max_chars, REPR_FACTOR if as_repr or not isinstance(value, str) else 1).chars


def json_size(value: Any, budget: Budget, indent: Any = None, separators: Any = None) -> int:
    """At most how many characters json.dumps(value, indent=..., separators=...) has."""
    shape = measure(value, budget.limits.max_chars, JSON_FACTOR)
    width = len(indent) if isinstance(indent, str) else max(indent, 0) if isinstance(indent, int) else 0
    per_line = 1 + width * shape.depth if indent is not None else 0
    joints = sum(len(str(s)) for s in separators) if isinstance(separators, (list, tuple)) else 2
    return shape.chars + shape.elements * (per_line + joints)


def number(digits: str) -> int:
    return int(digits) if len(digits) <= 12 else 10**13


def field_size(size: int, width: int, precision: int) -> int:
    """A value written in a field: padded to the width, plus the digits a precision may add."""
    return max(size, width) + precision


def spec_numbers(spec: str) -> tuple[int, int]:
    """(width, precision) of a format spec; a digit used as the fill character counts as width too."""
    head, dot, tail = spec.partition(".")
    precision = DIGITS.match(tail) if dot else None
    return sum(map(number, DIGITS.findall(head))), number(precision.group()) if precision else 0


def percent_size(template: Any, arguments: Any, budget: Budget) -> int:
    """At most how many characters `template % arguments` has."""
    text = template.decode("latin-1") if isinstance(template, bytes) else template
    positional = iter(arguments if isinstance(arguments, tuple) else (arguments,))
    total = len(text)
    for match in PERCENT_SPEC.finditer(text):
        key, width, precision, conversion = match.groups()
        total -= len(match.group())
        if conversion == "%":
            continue
        width, precision = (next(positional, 0) if n == "*" else number(n) if n else 0 for n in (width, precision))
        value = arguments[key] if key is not None else next(positional, "")
        total += field_size(text_size(value, budget, as_repr=conversion in "ra"), width, precision)
    return total


def format_size(template: str, args: Args, kwargs: Any, budget: Budget) -> int:
    """At most how many characters `template.format(*args, **kwargs)` has."""
    fields = list(Formatter().parse(template))
    nested = any(spec and "{" in spec for _, _, spec, _ in fields)
    values = [*args, *(kwargs.values() if isinstance(kwargs, dict) else ())]
    widest = max((v for v in values if isinstance(v, int)), default=0) if nested else 0
    largest = max((text_size(v, budget, as_repr=True) for v in values), default=0)
    automatic = iter(args)
    total = 0
    for literal, field, spec, conversion in fields:
        total += len(literal)
        if field is None:
            continue
        name = re.split(r"[.\[]", field, maxsplit=1)[0]  # the field's name, before any attribute or index
        if nested or name != field:  # a nested width or an attribute: bound by the largest argument
            size = largest
        else:
            value = next(automatic, "") if name == "" else args[int(name)] if name.isdigit() else kwargs[name]
            size = text_size(value, budget, as_repr=conversion in ("r", "a"))
        width, precision = spec_numbers(spec or "")
        total += field_size(size, width + widest, precision)
    return total


def replaced_size(text: Any, old: Any, new: Any, count: Any = -1) -> int:
    found = text.count(old) if len(old) else len(text) + 1
    if isinstance(count, int) and count >= 0:
        found = min(found, count)
    return len(text) + found * max(0, len(new) - len(old))


def padded_size(owner: Any, args: Args, kwargs: Kwargs) -> int:
    width = args[0] if args else kwargs.get("width", 0)
    return max(len(owner), width if isinstance(width, int) else 0)


def expanded_size(owner: Any, args: Args, kwargs: Kwargs) -> int:
    tabsize = args[0] if args else kwargs.get("tabsize", 8)
    size: int = len(owner) + owner.count("\t" if isinstance(owner, str) else b"\t") * max(tabsize, 1)
    return size


def translated_size(owner: Any, args: Args, kwargs: Kwargs) -> int:
    table = args[0] if args else None
    longest = max((len(v) for v in table.values() if isinstance(v, (str, bytes))), default=1) \
        if isinstance(table, dict) else 1
    return len(owner) * max(longest, 1)


def split_items(owner: Any, args: Args, kwargs: Kwargs) -> int:
    separator = args[0] if args else kwargs.get("sep")
    return owner.count(separator) + 1 if separator else len(owner) // 2 + 1


def bytes_length(owner: Any, args: Args, kwargs: Kwargs) -> int:
    length = args[0] if args else kwargs.get("length", 1)
    return length if isinstance(length, int) else 0


# Methods of str, bytes and int that build their result in one C call: sized before they run.
METHOD_CHARS: dict[str, Sizer] = {
    "center": padded_size, "ljust": padded_size, "rjust": padded_size, "zfill": padded_size,
    "expandtabs": expanded_size, "translate": translated_size, "to_bytes": bytes_length,
    "replace": lambda owner, args, kwargs: replaced_size(owner, *args[:3]),
}
METHOD_ITEMS: dict[str, Sizer] = {"split": split_items, "rsplit": split_items}


def estimate(sizer: Callable[..., int], *args: Any) -> int:
    """The sizer's bound, or 0 when the arguments are malformed (the real call then raises its own error)."""
    try:
        return sizer(*args)
    except (TypeError, ValueError, LookupError, AttributeError):
        return 0
