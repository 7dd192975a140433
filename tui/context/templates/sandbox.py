"""Jinja's immutable sandbox, with every way a template can grow data checked before it happens.

The hooks consult the Budget of the render running in this thread (render_limits.py): `+ * % **`
(intercepted binops), calls (str methods, macros), `~` (a code generator hook), `range`, the filters
that build text, every `{{ }}` (finalize) and every output buffer (concat). All of them return exactly
what plain Jinja returns when the limits hold, so renders stay identical to transformers'.
"""

from __future__ import annotations

import functools
import math
from types import BuiltinMethodType
from typing import Any, Callable, TypeAlias

from jinja2 import nodes
from jinja2.compiler import CodeGenerator, Frame, optimizeconst
from jinja2.filters import make_attrgetter
from jinja2.runtime import BlockReference, Context, LoopContext, Macro, markup_join, str_join
from jinja2.sandbox import ImmutableSandboxedEnvironment, SandboxedEnvironment

from tui.context.errors import TemplateLimitError
from tui.context.templates.limits import Budget, Floor, current
from tui.context.templates.size_bounds import (METHOD_CHARS, METHOD_ITEMS, Args, Kwargs, estimate, format_size,
                                               json_size, percent_size, replaced_size, text_size)

TEXT = (str, bytes)
SEQUENCES = (str, bytes, list, tuple)
PLAIN = frozenset({str, int, float, bool, type(None)})
DICT_NAMES = frozenset(dir(dict))  # `message.items` is the method; any other name on a dict is a key
STR_METHODS = frozenset(name for name in dir(str) if not name.startswith("_")) - {"format", "format_map"}
LOOP_NAMES = frozenset({"index", "index0", "revindex", "revindex0", "first", "last", "length", "depth", "depth0",
                        "previtem", "nextitem"})  # a loop's plain values (its cycle and changed are calls)
NESTING = (Macro, LoopContext, BlockReference)  # calls that run template code: counted for depth
SIZED_METHODS = frozenset({"join", *METHOD_CHARS, *METHOD_ITEMS})
# A filter's arguments after its environment or context (`rest`) and its keywords, as a check hands them on.
FilterCall: TypeAlias = tuple[Args, Kwargs]
# Sizes (and may materialise) a filter's arguments before it runs: (budget, head, rest, kwargs) -> (rest, kwargs).
FilterCheck: TypeAlias = Callable[[Budget, Args, Args, Kwargs], FilterCall]


def check_length(budget: Budget, sample: Any, size: int) -> None:
    if isinstance(sample, TEXT):
        budget.check_chars(size)
    else:
        budget.check_items(size)


def bounded_add(left: Any, right: Any) -> Any:
    if isinstance(left, SEQUENCES) and isinstance(right, SEQUENCES):
        size = len(left) + len(right)
        if size > Floor.size:
            check_length(current(), left, size)
    return left + right


def checked(value: Any) -> Any:
    """`value` itself, if its size is within the current render's limits."""
    kind = type(value)
    if (kind is str or kind is list or kind is dict or kind is tuple or kind is bytes) and len(value) > Floor.size:
        current().checked(value)
    return value


def bounded_multiply(left: Any, right: Any) -> Any:
    if isinstance(left, int) and isinstance(right, int):
        current().check_bits(left.bit_length() + right.bit_length())
    elif isinstance(left, SEQUENCES) and isinstance(right, int):
        check_length(current(), left, len(left) * right)
    elif isinstance(right, SEQUENCES) and isinstance(left, int):
        check_length(current(), right, len(right) * left)
    return left * right


def bounded_power(left: Any, right: Any) -> Any:
    if isinstance(left, int) and isinstance(right, int) and right > 0 and abs(left) > 1:
        budget = current()
        budget.check_bits(right)  # |left| >= 2: at least one bit per unit of the exponent
        budget.check_bits(int(right * math.log2(abs(left))) + 1)
    return left**right


def bounded_modulo(left: Any, right: Any) -> Any:
    if isinstance(left, TEXT):
        budget = current()
        budget.check_chars(estimate(percent_size, left, right, budget))
    return left % right


BINOPS: dict[str, Callable[[Any, Any], Any]] = {
    "+": bounded_add, "*": bounded_multiply, "**": bounded_power, "%": bounded_modulo}


def bounded_range(*args: int) -> range:
    numbers = range(*args)
    budget = current()
    try:
        size = len(numbers)
    except OverflowError:  # more numbers than an index holds: past any limit
        size = budget.limits.max_range + 1
    if size > budget.limits.max_range:
        raise TemplateLimitError("SizeLimit", f"range() of more than {budget.limits.max_range:,} numbers")
    budget.range_left -= size
    if budget.range_left < 0:
        raise TemplateLimitError("SizeLimit", "the template's range() calls passed "
                                 f"{budget.limits.max_range_total:,} numbers in total")
    return numbers


def checked_output(value: Any) -> Any:
    """`finalize` for every `{{ }}`: a nested value is measured before str() writes it out."""
    if type(value) not in PLAIN and not isinstance(value, str):
        budget = current()
        budget.check_chars(text_size(value, budget))
    return value


def bounded_concat(parts: Any) -> str:
    """The environment's `concat`, which joins every output buffer: the template, macros, blocks."""
    pieces = list(parts)
    budget = current()
    budget.check_time()
    if sum(map(len, pieces)) > budget.limits.max_chars:
        raise TemplateLimitError("SizeLimit", f"the template's output passed {budget.limits.max_chars:,} characters")
    return "".join(pieces)


def bounded_join(values: Args, autoescape: bool) -> str:
    """`a ~ b ~ c`: sized first, then joined exactly as Jinja joins it."""
    if set(map(type, values)) <= {str}:  # the usual case, counted without a Python loop
        size = sum(map(len, values))
        if size > Floor.size:
            current().check_chars(size)
    else:
        budget = current()
        budget.check_chars(sum(len(v) if type(v) is str else text_size(v, budget) for v in values))
    return markup_join(values) if autoescape else str_join(values)


class BoundedCodeGenerator(CodeGenerator):
    """Sends `~` through `environment.join_parts`; everything else is Jinja's own code generation."""

    @optimizeconst
    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:
        volatile = frame.eval_ctx.volatile
        autoescape = "context.eval_ctx.autoescape" if volatile else repr(bool(frame.eval_ctx.autoescape))
        self.write("environment.join_parts((")
        for argument in node.nodes:
            self.visit(argument, frame)
            self.write(", ")
        self.write(f"), {autoescape})")


class LimitedSandbox(ImmutableSandboxedEnvironment):
    """ImmutableSandboxedEnvironment whose growth is bounded by the current render's Budget."""

    intercepted_binops = frozenset(BINOPS)
    code_generator_class = BoundedCodeGenerator
    concat = staticmethod(bounded_concat)  # (Jinja's is "".join, a class attribute too)

    def __init__(self, filters: dict[str, Callable[..., Any]], **options: Any):
        super().__init__(finalize=checked_output, **options)
        self.join_parts = bounded_join
        self.globals["range"] = bounded_range
        self.filters.update(filters)
        for name, check in FILTER_CHECKS.items():
            self.filters[name] = bounded_filter(self.filters[name], check)

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        if operator == "+":  # the common one, inline: templates add strings on every turn
            if isinstance(left, SEQUENCES) and isinstance(right, SEQUENCES) and len(left) + len(right) > Floor.size:
                check_length(current(), left, len(left) + len(right))
            return left + right
        return BINOPS[operator](left, right)

    def getattr(self, obj: Any, attribute: str) -> Any:
        """What the sandbox's getattr gives, taken straight for the lookups a template makes on every turn:
        a message's key (`message.role`: plain Jinja tries the attribute, fails, then reads the key), a text's
        method (`content.startswith`: always safe; format and format_map still go the long way, to be wrapped) and
        a loop's place (`loop.last`)."""
        kind = type(obj)
        if kind is dict and attribute not in DICT_NAMES:
            try:
                return obj[attribute]
            except KeyError:
                return self.undefined(obj=obj, name=attribute)
        if kind is str and attribute in STR_METHODS or kind is LoopContext and attribute in LOOP_NAMES:
            return getattr(obj, attribute)
        return super().getattr(obj, attribute)

    def call(self, context: Context, obj: Any, /, *args: Any, **kwargs: Any) -> Any:
        if type(obj) is BuiltinMethodType:  # most calls: message.get(...), content.strip()
            if obj.__name__ in SIZED_METHODS and isinstance(obj.__self__, (str, bytes, int)):
                args = check_method(current(), obj, args, kwargs)
        elif isinstance(obj, NESTING):
            return self._call_nested(current(), context, obj, args, kwargs)
        result = SandboxedEnvironment.call(self, context, obj, *args, **kwargs)
        kind = type(result)  # checked(result), inline: calls are frequent
        if (kind is str or kind is list or kind is dict or kind is tuple or kind is bytes) and len(result) > Floor.size:
            current().checked(result)
        return result

    def _call_nested(self, budget: Budget, context: Context, obj: Any, args: Args, kwargs: Kwargs) -> Any:
        budget.check_time()
        budget.depth += 1
        try:
            if budget.depth > budget.limits.max_depth:
                raise TemplateLimitError("RecursionLimit", "the template's macros nest more than "
                                         f"{budget.limits.max_depth} calls deep")
            return SandboxedEnvironment.call(self, context, obj, *args, **kwargs)
        finally:
            budget.depth -= 1

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        if getattr(value, "__name__", None) not in ("format", "format_map"):  # every attribute comes here
            return None
        formatter = super().wrap_str_format(value)
        if formatter is None:
            return None
        template, mapping = value.__self__, value.__name__ == "format_map"

        def bounded_format(*args: Any, **kwargs: Any) -> str:
            budget = current()
            named = args[0] if mapping and args and not kwargs else kwargs
            budget.check_chars(estimate(format_size, template, () if mapping else args, named, budget))
            text = formatter(*args, **kwargs)
            checked(text)
            return text

        return functools.update_wrapper(bounded_format, value)


def check_method(budget: Budget, method: Any, args: Args, kwargs: Kwargs) -> Args:
    """Size a str/bytes/int method's result before the call; `join` gets its items as a list."""
    name, owner = method.__name__, method.__self__
    if name == "join" and len(args) == 1 and not isinstance(owner, int):
        items = list(args[0])
        budget.check_chars(sum(len(i) for i in items if isinstance(i, TEXT)) + len(owner) * max(len(items) - 1, 0))
        return (items,)
    if name in METHOD_CHARS:
        budget.check_chars(estimate(METHOD_CHARS[name], owner, args, kwargs))
    elif name in METHOD_ITEMS and len(owner) > budget.limits.max_items:
        budget.check_items(estimate(METHOD_ITEMS[name], owner, args, kwargs))
    return args


def bounded_filter(original: Callable[..., Any], check: FilterCheck) -> Callable[..., Any]:
    """Wrap a Jinja filter: `check` sizes (and may materialise) its arguments first, then its result is checked."""
    skip = 0 if getattr(original, "jinja_pass_arg", None) is None else 1  # the environment or eval context

    @functools.wraps(original)
    def bounded(*args: Any, **kwargs: Any) -> Any:
        head, rest = args[:skip], args[skip:]
        if rest:
            rest, kwargs = check(current(), head, rest, kwargs)
        return checked(original(*head, *rest, **kwargs))

    return bounded


def argument(rest: Args, kwargs: Kwargs, index: int, name: str, default: Any = None) -> Any:
    return rest[index] if len(rest) > index else kwargs.get(name, default)


def sized_text(budget: Budget, value: Any) -> str:
    """str(value), measured first when it is not a string already."""
    if not isinstance(value, str):
        budget.check_chars(text_size(value, budget))
    return str(value)


def check_center(budget: Budget, head: Args, rest: Args, kwargs: Kwargs) -> FilterCall:
    width = argument(rest, kwargs, 1, "width", 80)
    budget.check_chars(width if isinstance(width, int) else 0)
    return rest, kwargs


def check_indent(budget: Budget, head: Args, rest: Args, kwargs: Kwargs) -> FilterCall:
    text, width = sized_text(budget, rest[0]), argument(rest, kwargs, 1, "width", 4)
    prefix = len(width) if isinstance(width, str) else width if isinstance(width, int) else 0
    budget.check_chars(len(text) + max(prefix, 0) * (text.count("\n") + 1))
    return rest, kwargs


def check_join(budget: Budget, head: Args, rest: Args, kwargs: Kwargs) -> FilterCall:
    separator, attribute = argument(rest, kwargs, 1, "d", ""), argument(rest, kwargs, 2, "attribute")
    items = list(rest[0])
    if attribute is not None:  # what the filter itself would do first
        items = list(map(make_attrgetter(head[0].environment, attribute), items))
    glue = len(sized_text(budget, separator)) * max(len(items) - 1, 0)
    budget.check_chars(sum(len(i) if type(i) is str else text_size(i, budget) for i in items) + glue)
    return (items, separator), {k: v for k, v in kwargs.items() if k not in ("d", "attribute")}


def check_replace(budget: Budget, head: Args, rest: Args, kwargs: Kwargs) -> FilterCall:
    old, new, count = (argument(rest, kwargs, i, n) for i, n in ((1, "old"), (2, "new"), (3, "count")))
    if old is not None and new is not None:
        text = sized_text(budget, rest[0])
        budget.check_chars(estimate(replaced_size, text, str(old), str(new), count))
    return rest, kwargs


def check_format(budget: Budget, head: Args, rest: Args, kwargs: Kwargs) -> FilterCall:
    budget.check_chars(estimate(percent_size, sized_text(budget, rest[0]), kwargs or tuple(rest[1:]), budget))
    return rest, kwargs


def check_wordwrap(budget: Budget, head: Args, rest: Args, kwargs: Kwargs) -> FilterCall:
    wrapstring = argument(rest, kwargs, 3, "wrapstring")
    if isinstance(wrapstring, str) and len(wrapstring) > 1:  # one more wrapstring per line at most
        text = sized_text(budget, rest[0])
        budget.check_chars(len(text) + (len(text) + 1) * len(wrapstring))
    return rest, kwargs


def check_text(budget: Budget, head: Args, rest: Args, kwargs: Kwargs) -> FilterCall:
    if not isinstance(rest[0], str):  # measured, not written out: the filter writes it
        budget.check_chars(text_size(rest[0], budget))
    return rest, kwargs


def check_tojson(budget: Budget, head: Args, rest: Args, kwargs: Kwargs) -> FilterCall:
    indent, separators = argument(rest, kwargs, 2, "indent"), argument(rest, kwargs, 3, "separators")
    budget.check_chars(estimate(json_size, rest[0], budget, indent, separators))
    return rest, kwargs


def check_list(budget: Budget, head: Args, rest: Args, kwargs: Kwargs) -> FilterCall:
    if isinstance(rest[0], TEXT):
        budget.check_items(len(rest[0]))
    return rest, kwargs


def check_sum(budget: Budget, head: Args, rest: Args, kwargs: Kwargs) -> FilterCall:
    start = argument(rest, kwargs, 2, "start", 0)
    if not isinstance(start, (list, tuple)):
        return rest, kwargs
    items, attribute = list(rest[0]), argument(rest, kwargs, 1, "attribute")
    if attribute is not None:
        items = list(map(make_attrgetter(head[0], attribute), items))
    total = start  # added up here as sum() would, but one step at a time: sum() is quadratic inside one C call
    for item in items:
        total = bounded_add(total, item)
    return ([total],), {"start": start[:0]}


def check_count(name: str, index: int) -> FilterCheck:
    """For filters that build `count` lists or fill with `count` items (slice, batch)."""

    def check(budget: Budget, head: Args, rest: Args, kwargs: Kwargs) -> FilterCall:
        count = argument(rest, kwargs, index, name)
        budget.check_items(count if isinstance(count, int) else 0)
        return rest, kwargs

    return check


FILTER_CHECKS: dict[str, FilterCheck] = {
    "center": check_center, "indent": check_indent, "join": check_join, "replace": check_replace,
    "format": check_format, "wordwrap": check_wordwrap, "string": check_text, "pprint": check_text,
    "tojson": check_tojson, "list": check_list, "sum": check_sum, "slice": check_count("slices", 1),
    "batch": check_count("linecount", 1),
}
