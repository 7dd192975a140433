"""llama.cpp refuses a streamed request that asks for logprobs beside tools (400 "logprobs is not supported with
tools + stream", b11669): the app asks for them only where the server answers (found by
tests/test_normalisation_server.py, whose follow-up in an imported tool loop was refused)."""

from __future__ import annotations

import pytest

from tui.context.messages import Message
from tui.context.templates.library import builtin_template
from tui.controller.workbench import Workbench
from tui.sessions.model import Session

pytestmark = pytest.mark.unit
TOOL = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}


@pytest.mark.parametrize("tools, stream, asked", [(None, True, True), ([TOOL], False, True), ([TOOL], True, False)])
def test_logprobs_are_asked_only_where_the_server_answers(tools, stream, asked):
    bench = Workbench(Session(messages=[Message("user", "Weather?", id="m1")], tools=tools),
                      builtin_template("qwen3"))
    view = bench.compute()
    bench.server_cache = object()  # type: ignore[assignment]  # the server's cache is modelled (llama.cpp)
    body = bench.request_body(view, stream)
    assert ("logprobs" in body) is asked and ("top_logprobs" in body) is asked
