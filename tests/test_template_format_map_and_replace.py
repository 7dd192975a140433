"""Two calls the template limits must cover like their twins: the `replace` filter (the str method is
tested in test_template_limits.py) and `str.format_map` (`str.format` is). Both must be sized before
they build, and format_map must go through the sandbox's formatter as format does.

Found by planting defects (tests/plant_defects.py): with either left out of the sandbox, every other
test still passed.
"""

import pytest

from tui.context.errors import TemplateLimitError, TemplateRenderError
from tui.context.templates.limits import RenderLimits
from tui.context.templates.hf_render import render_limited, render_template

pytestmark = pytest.mark.timeout(60)
QUICK = RenderLimits(seconds=0.3, max_memory=300 << 20)
USER = [{"role": "user", "content": "hi"}]


# 10**12 characters: a size checked only after the call would end in malloc's MemoryError instead.
@pytest.mark.parametrize("source", [
    "{{ ('x' * 1000000)|replace('', 'y' * 1000000) }}",
    "{{ '{x:>1000000000000}'.format_map({'x': 1}) }}",
])
def test_sized_before_they_build(source):
    with pytest.raises(TemplateLimitError) as info:
        render_limited(source, USER, {}, QUICK)
    assert info.value.kind == "SizeLimit"


def test_format_map_cannot_reach_private_attributes():
    with pytest.raises(TemplateRenderError) as info:
        render_template("{{ '{m.__class__.__mro__}'.format_map({'m': messages}) }}", USER)
    assert info.value.kind == "SecurityError"


def test_format_map_and_the_replace_filter_still_work():
    source = "{{ '{a}-{b}'.format_map({'a': 1, 'b': 'x'}) }} {{ 'a.b.c'|replace('.', '--') }}"
    assert render_template(source, USER) == "1-x a--b--c"
