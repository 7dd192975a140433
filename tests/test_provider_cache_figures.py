"""What a provider says of its own cache, read from its reply: writes (OpenAI's cache_write_tokens from GPT-5.6
on, Anthropic's cache_creation_input_tokens through a gateway) priced as written, and Anthropic's cache_miss_reason
set beside ctxpane's predicted cause (never shown as it came)."""

from decimal import Decimal

import msgspec

from tui.client.figures import reported_from_reply
from tui.client.reply import ReplyAssembler
from tui.client.schemas import Chunk
from tui.context import builtin_template, get_tokenizer, message_from_dict
from tui.context.cache.predict import cache_report, provider_diagnosis
from tui.context.request import RequestSettings, build_request
from tui.sessions.price_files import shipped_prices
from tui.sessions.receipts import cost_of


def reply_of(answer: dict):
    assembler = ReplyAssembler()
    assembler.apply(msgspec.json.decode(msgspec.json.encode(answer), type=Chunk))
    return assembler.reply


def answer(usage: dict, diagnostics: dict | None = None) -> dict:
    found = {"model": "gpt-5.6-sol", "choices": [{"message": {"content": "4"}, "finish_reason": "stop"}],
             "usage": usage}
    return {**found, "diagnostics": diagnostics} if diagnostics is not None else found


def view_for(model: str = "gpt-5.6-sol"):
    messages = [message_from_dict({"role": "user", "content": "What is 2+2?"}, 0)]
    return build_request(messages, RequestSettings(builtin_template("openai"), get_tokenizer("o200k_base"),
                                                   model=model))


def test_openai_cache_writes_are_read_and_priced_at_the_write_price():
    reply = reply_of(answer({"prompt_tokens": 4000, "completion_tokens": 1,
                             "prompt_tokens_details": {"cached_tokens": 1000, "cache_write_tokens": 2500}}))
    reported = reported_from_reply(reply)
    assert reported.cache_written == 2500 and reported.reused() == 1000
    cost = cost_of(view_for(), reported, shipped_prices(), "gpt-5.6-sol", None, "openai-5.6")
    assert cost["cache_write_tokens"] == 2500 and cost["cached_tokens"] == 1000
    # 500 fresh x $5 + 1,000 cached x $0.50 + 2,500 written x $6.25 (1.25x) + 1 out x $30, per million
    expected = (Decimal(500) * 5 + Decimal(1000) * Decimal("0.5") + Decimal(2500) * Decimal("6.25") + 30) / 10 ** 6
    assert abs(Decimal(str(cost["paid"])) - expected) < Decimal("1e-9")


def test_anthropic_cache_creation_through_a_gateway_counts_as_written():
    reply = reply_of(answer({"prompt_tokens": 3000, "completion_tokens": 1, "cache_creation_input_tokens": 2048}))
    assert reported_from_reply(reply).cache_written == 2048


def test_the_providers_miss_reason_is_set_beside_the_predicted_cause():
    reply = reply_of(answer({"prompt_tokens": 20}, {"cache_miss_reason": {"type": "messages_changed",
                                                                           "cache_missed_input_tokens": 812}}))
    assert reply.to_record()["diagnostics"]["cache_miss_reason"]["type"] == "messages_changed"
    view = view_for()
    report = cache_report(view.prefix, 0, view.shape, view.document, None, reply.diagnostics)
    note = next(n for n in report.notes if "provider says" in n)
    assert "the messages changed, 812 input tokens missed" in note and "predicted cause" in note


def test_a_hostile_miss_reason_is_named_not_shown():
    said = provider_diagnosis({"cache_miss_reason": {"type": "\x1b]52;c;cm0gLXJmIH4=\x07[red]x"}})
    assert said.endswith("a reason ctxpane does not know") and "\x1b" not in said and "[red]" not in said
    assert provider_diagnosis({"cache_miss_reason": "text"}) == "" and provider_diagnosis(None) == ""
    for odd in (["x"], {"a": 1}, 5, None):  # a stored reply is outside text too: never a crash (was: unhashable)
        assert provider_diagnosis({"cache_miss_reason": {"type": odd}}).endswith("does not know")


def test_odd_cache_figures_are_unknown_not_a_failed_reply():
    """Figures that only inform are read leniently: an odd one is unknown, and the reply still arrives."""
    for usage, diagnostics in (({"prompt_tokens": 5, "cache_creation_input_tokens": -1}, "n/a"),
                               ({"prompt_tokens": 5, "prompt_tokens_details": {"cache_write_tokens": 12.0}},
                                {"cache_miss_reason": {}}),
                               ({"prompt_tokens": 5, "cache_creation_input_tokens": "3"},
                                {"cache_miss_reason": {"type": 5}}),
                               ({"prompt_tokens": 5}, {"cache_miss_reason": {"type": "x" * 5000}})):
        reply = reply_of(answer(usage, diagnostics))
        assert reply.content == "4" and reply.diagnostics is None
        assert reported_from_reply(reply).cache_written is None


def test_a_session_whose_request_was_predicted_from_the_summary_call_loads_again(tmp_path):
    """The summary call is held as request 0: a session saved with it as a request's cache source must load."""
    from tui.context.cache.history import SUMMARY_CALL
    from tui.sessions.store import load_session, save_session
    from tui.sessions.model import RequestRecord, Session
    session = Session(requests=[RequestRecord(number=1, time="2026-12-02T06:00:00+00:00", body={"messages": []},
                                              cache_source=SUMMARY_CALL)])
    path = tmp_path / "s.json"
    save_session(session, path)
    assert load_session(path).session.requests[0].cache_source == SUMMARY_CALL
