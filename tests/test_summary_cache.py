"""ctxpane's own summary call is a request the server computes in a slot: the model of llama.cpp's cache holds it,
so the conversation's next request is predicted against it (a miss is not blamed on another client)."""

import uuid

import pytest

from controller_helpers import Harness, eight_turns
from tui.context.cache.causes import CauseClass
from tui.context.messages import Message
from tui.context.cache.history import SUMMARY_CALL, request_name
from tui.controller.events import StatusChanged
from tui.sessions.model import Session


def test_the_summary_call_is_named_as_such():
    assert request_name(SUMMARY_CALL) == "ctxpane's summary call" and request_name(3) == "request 3"


@pytest.mark.server
async def test_the_request_after_a_summary_call_is_predicted_against_it(llama_server, tmp_path, monkeypatch):
    # Before, the model still had request 1 in the slot: it predicted what request 1 shares (its system prompt),
    # the server reused only the summary call's header, and the pane said "another client used its slot".
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    made = Harness(tmp_path, base_url=llama_server, tokenizer="")
    made.ctl.adopt(Session(params={"temperature": 0, "max_tokens": 8}), None)
    made.ctl.connect()
    await made.idle()
    ctl = made.ctl
    assert ctl.client is not None and ctl.sending.cache.model is not None
    # a system prompt no other test sends: prompts the shared server holds from them share only its header
    ctl.wb.session.messages.append(Message("system", f"Session {uuid.uuid4().hex}. You are terse.", id="sys"))
    ctl.wb.session.messages.extend(eight_turns())
    ctl.refresh()
    await made.send("first question?")  # the slot holds this conversation
    ctl.wb.set_policy(name="summarise", context_window=260, max_tokens=20)
    ctl.refresh()
    await made.idle()
    await made.send("what now?")  # a summary call first, then the request
    record = ctl.wb.session.requests[-1]
    assert ctl.wb.session.policy.get("summary") and len(ctl.wb.session.requests) == 2
    assert record.cached_reported is not None and record.predicted_cached is not None
    assert abs(record.cached_reported - record.predicted_cached) <= 1, (record.cached_reported,
                                                                         record.predicted_cached)
    assert record.cache_class == CauseClass.SUMMARY and record.cache_source == SUMMARY_CALL
    texts = [e.text for e in made.of(StatusChanged)]  # (the shared server may hold other tests' prompts before)
    after = " ".join(texts[max(i for i, text in enumerate(texts) if text.startswith("summary made")):])
    assert "another client" not in after and "summary call" in after
    ctl.close()


def test_two_summary_calls_are_held_apart():
    """Both held under one number, a later one hid an earlier one the server still had (in another slot or its
    host cache): an explanation could quote the wrong prompt. Each is held under its own number now."""
    from types import SimpleNamespace

    from tui.client.reply import Reply
    from tui.context import builtin_template, get_tokenizer
    from tui.context.policy.summary_call import summary_shape
    from tui.controller.caching import ServerCache

    class Recording:  # stands in for the model of the server's cache: what it is asked to hold
        def __init__(self) -> None:
            self.numbers: list[int] = []

        def record(self, held) -> None:
            self.numbers.append(held.number)

    parts = SimpleNamespace(wb=SimpleNamespace(server_cache=None), changed=lambda save=True: None)
    cache = ServerCache(parts)
    cache.model = Recording()
    template, tokenizer = builtin_template("qwen3"), get_tokenizer("qwen3")
    for text in ("first summary", "second summary"):
        body = {"messages": [{"role": "system", "content": "Summarise."}, {"role": "user", "content": text}]}
        cache.after_summary(summary_shape(body, template, tokenizer), Reply(content="ok"), 0.0)
    numbers = cache.model.numbers
    assert len(set(numbers)) == 2 and all(n < 1 for n in numbers), numbers  # apart, and never a request's
    assert {request_name(n) for n in numbers} == {"ctxpane's summary call"}
