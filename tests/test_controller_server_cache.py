"""The app's model of llama.cpp's prompt cache against the real server: a sequence that leaves a conversation
and returns to it; before each request the pane's predicted cached tokens equal the server's cache_n (within 1)."""

from __future__ import annotations

from controller_helpers import Harness
from tui.controller.events import StatusChanged
from tui.sessions.model import Session


async def test_returning_to_an_earlier_conversation_is_predicted_from_the_host_cache(llama_server, tmp_path,
                                                                                     monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    made = Harness(tmp_path, base_url=llama_server, tokenizer="")
    params = {"temperature": 0, "max_tokens": 12}
    first = Session(params=dict(params))
    made.ctl.adopt(first, None)
    made.ctl.connect()
    await made.idle()
    ctl = made.ctl
    assert ctl.sending.cache.model is not None, [e.text for e in made.of(StatusChanged)]
    await made.send("Name three rivers in Europe, briefly.")
    await made.send("Which of them is the longest?")
    ctl.adopt(Session(params=dict(params)), None)  # another conversation takes the slot
    await made.idle()
    await made.send("Write a haiku about snow and pine trees.")
    ctl.adopt(first, None)  # and back to the first one
    await made.idle()
    ctl.set_draft("And the shortest?")
    await made.idle()
    shown = ctl.pane_state().view.prefix  # the pane predicts from the server's cache before anything is sent
    assert shown.source == 2 and shown.tokens > 20, (shown.source, shown.tokens, shown.place)
    await made.send("And the shortest?")
    ctl.close()
    back = first.requests[-1]
    assert back.cached_reported and back.cached_reported > 20  # the server reused the earlier prompt
    assert abs(back.predicted_cached - back.cached_reported) <= 1, (back.predicted_cached, back.cached_reported,
                                                                     back.cache_place, back.cache_cause)
    assert back.cache_source == 2 and "cache" in back.cache_place, (back.cache_source, back.cache_place)
    statuses = [e.text for e in made.of(StatusChanged)]
    assert any(text.startswith("cache ✓ predicted") for text in statuses), statuses[-5:]


async def test_going_back_inside_one_conversation_is_predicted_from_the_request_still_held(llama_server, tmp_path,
                                                                                           monkeypatch):
    """The previous request shares almost nothing (another system prompt); an earlier one is still in the
    server's host cache, and the prediction says so: comparing with the previous request alone would say ~0."""
    from tui.context.messages import Message, Provenance
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    made = Harness(tmp_path, base_url=llama_server, tokenizer="")
    system = Message("system", "You are a terse geography tutor. Answer in one short sentence.",
                     provenance=Provenance("system_prompt", True), id="s1")
    session = Session(params={"temperature": 0, "max_tokens": 12}, messages=[system])
    made.ctl.adopt(session, None)
    made.ctl.connect()
    await made.idle()
    ctl = made.ctl
    await made.send("What is the capital of Portugal?")
    kept = list(session.messages)
    session.messages = [Message("system", "Reply only in French.", provenance=Provenance("system_prompt", True),
                                id="s2"), *kept[1:]]
    ctl.changed()
    await made.send("And of Spain?")
    session.messages = kept  # the first system prompt back, the French turn gone
    ctl.changed()
    await made.idle()
    await made.send("And of Italy?")
    ctl.close()
    back = session.requests[-1]
    assert back.cached_reported and back.cached_reported > 20, back.cached_reported
    assert abs(back.predicted_cached - back.cached_reported) <= 1, (back.predicted_cached, back.cached_reported,
                                                                     back.cache_place, back.cache_cause)
    assert back.cache_source == 1, (back.cache_source, back.cache_place)


async def test_llama_requests_ask_for_the_generated_tokens_cheaply(llama_server, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    made = Harness(tmp_path, base_url=llama_server, tokenizer="")
    made.ctl.adopt(Session(params={"temperature": 0, "max_tokens": 8}), None)
    made.ctl.connect()
    await made.idle()
    await made.send("Say one word.")
    made.ctl.close()
    record = made.ctl.wb.session.requests[-1]
    assert record.body["logprobs"] is True and record.body["top_logprobs"] == 1  # 1: not every alternative
    assert record.reply.get("generated"), record.reply  # the tokens as generated arrived


async def test_odd_figures_in_a_stored_record_do_not_spoil_the_cache_model(llama_server, tmp_path, monkeypatch):
    """A record with figures of the wrong type (timings are free-form in memory; an imported record may carry
    them): the model is still rebuilt from the session, and the next prediction equals the server's cache_n."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    made = Harness(tmp_path, base_url=llama_server, tokenizer="")
    session = Session(params={"temperature": 0, "max_tokens": 8})
    made.ctl.adopt(session, None)
    made.ctl.connect()
    await made.idle()
    await made.send("Name a river.")
    made.ctl.close()
    session.requests[-1].timings = {"predicted_n": "lots", "prompt_n": [1], "cache_n": True}
    again = Harness(tmp_path / "again", base_url=llama_server, tokenizer="")
    again.ctl.adopt(session, None)
    again.ctl.connect()
    await again.idle()
    assert again.ctl.sending.cache.model is not None
    await again.send("And another?")
    record = session.requests[-1]
    assert record.cached_reported > 0
    assert abs(record.predicted_cached - record.cached_reported) <= 1, (record.predicted_cached, record.cached_reported)
    again.ctl.close()
