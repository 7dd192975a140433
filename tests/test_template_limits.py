"""Untrusted chat templates run with limits: time, memory, sizes and depth end in a TemplateLimitError.

Each hostile template here hung, crashed with MemoryError or ate gigabytes before the limits. The limits
are set short so the file stays quick; on broken limits the templates are still finite, so a test fails
instead of hanging.
"""

import functools
import threading
import time

import jinja2
import pytest
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

from conftest import load_cases, template_source
from tui.context.errors import TemplateLimitError, TemplateRenderError
from tui.context.templates.limits import RenderLimits
from tui.context.templates.library import builtin_names, builtin_template, template_from_text
from tui.context.templates.hf_render import (DictFactory, GenerationTag, SafeNamespace, hf_tojson, normalise_message,
                                   raise_exception, render_limited, render_template, strftime_now)

pytestmark = pytest.mark.timeout(60)
QUICK = RenderLimits(seconds=0.3, max_memory=300 << 20)
# For templates another limit must stop: a deadline far past their cost, so a loaded machine never reaches it first.
PATIENT = RenderLimits(seconds=10, max_memory=300 << 20)
SMALL = RenderLimits(seconds=2, max_chars=1000, max_items=100, max_range=50, max_range_total=200, max_depth=10,
                     max_int_bits=64)
USER = [{"role": "user", "content": "hi"}]


def conversation(turns: int) -> list[dict]:
    code = "def f(x):\n    return {'k': [x, \"<b>\"]}\n" * 20
    return [{"role": "system", "content": "You are careful."}] + [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i}: " + ("prose " * 50, code)[i % 2]}
        for i in range(turns)]


def limit_error(source: str, limits: RenderLimits = QUICK, messages=USER) -> TemplateLimitError:
    with pytest.raises(TemplateLimitError) as info:
        render_limited(source, messages, {}, limits)
    return info.value


@functools.lru_cache(maxsize=None)
def plain_template(source: str) -> jinja2.Template:
    """The template in Jinja's plain immutable sandbox, set up as transformers sets it up."""
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[GenerationTag, loopcontrols])
    env.filters["tojson"] = hf_tojson
    env.globals.update(raise_exception=raise_exception, strftime_now=strftime_now, namespace=SafeNamespace,
                       dict=DictFactory())
    return env.from_string(source)


def plain_render(source: str, messages: list, **variables) -> str:
    context = {"tools": None, "documents": None, **variables}
    return plain_template(source).render(messages=[normalise_message(m) for m in messages], **context)


# --- the limits hold exactly at their bounds ----------------------------------------------------------------

@pytest.mark.parametrize("expression, largest", [
    ("'ab' * N", 500), ("[1, 2] * N", 50), ("'x' * 500 + 'y' * N", 500), ("'x' * 500 ~ 'y' * N", 500),
    ("['x' * 500] + ['y'] * N", 99), ("'x'|center(N)", 1000), ("'x'.center(N)", 1000),
    ("('a' * 10).replace('a', 'b' * N)", 100), ("(['x' * 10] * N)|join", 100), ("'{:>N}'.format(1)", 1000),
    ("'%Nd' % 1", 1000), ("(2 ** N)|string", 63), ("range(N)|list", 50), ("'ab'|indent(N, true)", 998),
])
def test_each_bound_admits_its_limit_and_refuses_one_more(expression, largest):
    source = "{{ (" + expression + ")|length }}"
    assert render_limited(source.replace("N", str(largest)), USER, {}, SMALL).isdigit()
    assert limit_error(source.replace("N", str(largest + 1)), SMALL).kind == "SizeLimit"


def test_range_total_is_counted_over_the_whole_render():
    assert render_limited("{% for i in 'abcd' %}{{ range(50)|length }}{% endfor %}", USER, {}, SMALL) == "50" * 4
    error = limit_error("{% for i in 'abcde' %}{{ range(50)|length }}{% endfor %}", SMALL)
    assert error.kind == "SizeLimit" and "200" in error.message


def test_output_built_in_small_pieces_is_bounded():
    source = "{% for i in range(40) %}{{ 'x' * 30 }}{% endfor %}"  # 1,200 characters, 30 at a time
    assert "output" in limit_error(source, SMALL).message
    assert "macro" not in limit_error("{% macro m() %}" + source + "{% endmacro %}{{ m()|length }}", SMALL).message


def test_recursion_depth_is_bounded_and_legitimate_recursion_works():
    countdown = "{% macro f(n) %}{{ n }}{% if n %}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(N) }}"
    assert render_limited(countdown.replace("N", "9"), USER, {}, SMALL) == "9876543210"
    assert limit_error(countdown.replace("N", "10"), SMALL).kind == "RecursionLimit"


# --- the hostile templates of the issue ----------------------------------------------------------------------

def test_nested_range_loops_stop_quickly():
    source = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
    error = limit_error(source, RenderLimits(seconds=5))
    # stopped by the size of the loops, before they ran: not by the 5 s deadline (a TimeLimit), whatever the load
    assert error.kind == "SizeLimit" and "range()" in error.message


def test_a_tight_loop_that_calls_nothing_is_interrupted():
    source = "{% set x = range(6000)|list %}{% for i in x %}{% for j in x %}{% endfor %}{% endfor %}done"
    started = time.monotonic()
    error = limit_error(source, RenderLimits(seconds=0.2))
    elapsed = time.monotonic() - started
    assert (error.kind, error.message) == ("TimeLimit", "the template ran for more than 0.2 s")
    # not before its deadline; and long before the 36 million steps would end (a bound loose enough for a loaded box)
    assert 0.15 < elapsed < 5.0


@pytest.mark.parametrize("source, kind", [
    ("{{ 'ab' * 2000000000 }}", "SizeLimit"),
    ("{{ [1] * 10**10 }}", "SizeLimit"),
    ("{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}", "SizeLimit"),
    ("{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}{% endfor %}", "SizeLimit"),
    ("{{ 'x'|center(10**10) }}", "SizeLimit"),
    ("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", "RecursionLimit"),
    ("{% for i in range(10**9) %}{% endfor %}", "SizeLimit"),
    ("{{ (['x' * 1000000] * 1000000)|join }}", "SizeLimit"),
    ("{% set big = 'x' * 40000000 %}{{ [big, big]|join }}", "SizeLimit"),
    ("{{ ','.join(['x' * 1000000] * 1000) }}", "SizeLimit"),
    ("{% set ns = namespace(x=[1]) %}{% for i in range(64) %}{% set ns.x = [ns.x, ns.x] %}{% endfor %}{{ ns.x }}",
     "SizeLimit"),
    ("{% set ns = namespace(x=[1]) %}{% for i in range(64) %}{% set ns.x = [ns.x, ns.x] %}{% endfor %}"
     "{{ ns.x|tojson }}", "SizeLimit"),
    ("{{ 10 ** (10 ** 10) }}", "SizeLimit"),
    ("{% set ns = namespace(x=10**100) %}{% for i in range(40) %}{% set ns.x = ns.x * ns.x %}{% endfor %}",
     "SizeLimit"),
    ("{{ '{:>10000000000}'.format(1) }}", "SizeLimit"),
    ("{{ '%*d' % (10000000000, 1) }}", "SizeLimit"),
    ("{{ 'a\nb'|indent(10**10) }}", "SizeLimit"),
    ("{{ ('\t' * 1000000).expandtabs(100000) }}", "SizeLimit"),
    ("{{ (1).to_bytes(10**10, 'big') }}", "SizeLimit"),
    ("{{ strftime_now('%c' * 10000000) }}", "SizeLimit"),
    ("{{ [1]|batch(10**10, 0)|list }}", "SizeLimit"),
    ("{{ ('x' * 1000000).replace('', 'y' * 1000) }}", "SizeLimit"),
])
def test_hostile_templates_end_in_a_limit_error(source, kind):
    error = limit_error(source, PATIENT)  # (the kind says which limit stopped it: a TimeLimit, the deadline)
    assert error.kind == kind
    assert "\n" not in error.message and error.message.startswith("the template") or "range()" in error.message


def test_memory_growth_is_stopped():
    # Each turn keeps a new 1 MB string: 1 GB if nothing stopped it.
    source = ("{% set ns = namespace(items=[]) %}{% for i in range(1000) %}"
              "{% set ns.items = ns.items + [('x' * 1000000) ~ i] %}{% endfor %}")
    error = limit_error(source, RenderLimits(seconds=10, max_memory=50 << 20))
    assert (error.kind, error.message) == ("MemoryLimit", "the template used more than 50 MB of memory")


def test_python_memory_and_recursion_errors_become_limit_errors():
    loose = RenderLimits(max_chars=10**13, max_depth=10**6)
    assert limit_error("{{ 'ab' * 10**12 }}", loose).kind == "MemoryLimit"  # malloc refuses 2 TB
    assert limit_error("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", loose).kind == "RecursionLimit"


def test_a_quadratic_sum_is_interrupted():
    error = limit_error("{{ ([[1] * 1000] * 10000)|sum(start=[]) }}", RenderLimits(seconds=0.3))
    assert error.kind == "TimeLimit"


def test_the_template_text_itself_is_bounded():
    assert limit_error("x" * 1001, RenderLimits(max_source=1000)).kind == "SizeLimit"


def test_a_template_error_message_is_cut_to_what_a_screen_can_show():
    with pytest.raises(TemplateRenderError) as info:
        render_template("{{ raise_exception('x' * 100000) }}", USER)
    assert info.value.kind == "TemplateError" and len(info.value.message) <= 2001


# --- the process stays usable --------------------------------------------------------------------------------

def test_a_render_after_a_timeout_works_and_no_interrupt_lands_later():
    assert limit_error("{% for i in range(100000) %}{% for j in range(100) %}{% endfor %}{% endfor %}",
                       RenderLimits(seconds=0.1, max_range_total=10**9)).kind == "TimeLimit"
    assert render_template("{{ messages[0].content }}", USER) == "hi"
    ends = time.monotonic() + 0.4  # past any deadline the first render had
    while time.monotonic() < ends:
        sum(range(1000))


def test_renders_that_end_near_their_deadline_never_leave_an_interrupt_behind():
    # Loops from far shorter to far longer than the deadline: many end just before or just after it fires.
    outcomes = []
    for attempt in range(120):
        rounds = (attempt % 40 + 1) ** 2 * 3  # 300 to 480,000 turns of an empty loop
        source = "{% for i in range(N) %}{% for j in range(100) %}{% endfor %}{% endfor %}ok".replace("N", str(rounds))
        try:
            outcomes.append(render_limited(source, USER, {}, RenderLimits(seconds=0.005, max_range_total=10**9)))
        except TemplateLimitError as error:
            outcomes.append(error.kind)
        for _ in range(300):  # an interrupt left pending would land in this loop
            sum(range(50))
    assert set(outcomes) == {"ok", "TimeLimit"}


def test_a_timeout_in_one_thread_leaves_another_threads_render_alone():
    results = {}

    def hostile():
        try:
            render_limited("{% for i in range(100000) %}{% for j in range(100) %}{% endfor %}{% endfor %}",
                           USER, {}, RenderLimits(seconds=0.2, max_range_total=10**9))
        except TemplateLimitError as error:
            results["hostile"] = error.kind

    thread = threading.Thread(target=hostile)
    thread.start()
    messages = conversation(100)
    template = builtin_template("chatml")
    expected = template.render(messages)
    while thread.is_alive():
        assert template.render(messages) == expected
    thread.join()
    assert results == {"hostile": "TimeLimit"}


# --- ordinary templates are untouched ------------------------------------------------------------------------

@pytest.mark.parametrize("name", [n for n in builtin_names() if n != "harmony"])
def test_builtin_templates_render_a_long_conversation_exactly_as_plain_jinja(name):
    template = builtin_template(name)
    messages = conversation(600)
    variables = {**template.defaults, "add_generation_prompt": True}
    assert template.render(messages, add_generation_prompt=True) == plain_render(template.source, messages,
                                                                                 **variables)


@pytest.mark.bulk
def test_reference_templates_with_tools_render_exactly_as_plain_jinja():
    cases = [c for c in load_cases() if c["template"] != "harmony" and "expected" in c and c["kwargs"].get("tools")]
    assert len(cases) > 20
    for case in cases:
        source = template_source(case["template"])
        limited = render_limited(source, case["messages"], case["kwargs"], RenderLimits(max_chars=100_000))
        try:
            assert limited == plain_render(source, case["messages"], **case["kwargs"])
        except jinja2.TemplateError:
            pytest.fail(f"plain Jinja failed where the limited sandbox rendered: {case['id']}")


def test_a_chat_template_carries_its_own_limits():
    template = template_from_text("{{ 'ab' * 600 }}", origin="test")
    assert len(template.render(USER)) == 1200
    template.limits = SMALL
    with pytest.raises(TemplateLimitError):
        template.render(USER)


def test_an_interrupt_swallowed_in_the_render_thread_is_raised_again():
    """Seen in a CI run: the watchdog's interrupt landed while the render thread ran a finalizer (an event loop's
    __del__, called by the garbage collector), where Python reports an exception and drops it; the render then
    ran on past its deadline, as the watch had fired once. A swallowed interrupt is raised again while armed."""
    import time as clock

    from tui.context.errors import TemplateLimitError
    from tui.context.templates.limits import Interrupted, RenderLimits, run_limited

    def swallows_one() -> str:
        give_up = clock.monotonic() + 5
        try:
            while clock.monotonic() < give_up:
                pass
        except Interrupted:
            pass  # as a finalizer's exception is: reported and dropped
        while clock.monotonic() < give_up:
            pass
        return "ran past its deadline"
    with pytest.raises(TemplateLimitError):
        run_limited(RenderLimits(seconds=0.2, max_memory=0), swallows_one)
