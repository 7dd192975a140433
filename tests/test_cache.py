"""The cache-stable prefix: where it ends, why, and what the provider will actually reuse."""

import json
import urllib.request

import pytest

from conftest import DATA
from tui.context import builtin_template, get_tokenizer, load_template, message_from_dict
from tui.context.policy.truncation import PolicySettings
from tui.context.cache.prefix import common_prefix_length, predict_cached, span_diff
from tui.context.tokens.counting import token_index
from tui.context.request import RequestSettings, build_request


def msgs(system="You are terse.", extra=(), first="Hi"):
    items = [{"role": "system", "content": system}, {"role": "user", "content": first},
             {"role": "assistant", "content": "Hello."}, *extra, {"role": "user", "content": "Next?"}]
    return [message_from_dict(item, i) for i, item in enumerate(items)]


def settings(template="chatml", **kw):
    return RequestSettings(builtin_template(template), get_tokenizer("o200k_base"), **kw)


def pair(before, after, s_before=None, s_after=None):
    first = build_request(before, s_before or settings())
    return build_request(after, s_after or s_before or settings(), previous=first.shape, request_number=2)


def test_append_only_reuses_everything():
    later = msgs(extra=[{"role": "user", "content": "more"}, {"role": "assistant", "content": "ok"}])
    view = pair(msgs()[:3], later)
    assert view.prefix.cause.startswith("none") and view.prefix.chars > 0


def test_changed_system_prompt():
    view = pair(msgs("Time: 10:00. Be terse."), msgs("Time: 10:01. Be terse."))
    assert view.prefix.cause.startswith("changed system prompt") and view.origin[view.prefix.message] == 0
    assert view.prefix.tokens < 10


def test_edited_message():
    view = pair(msgs(first="Hi"), msgs(first="Hello there"))
    assert view.prefix.cause.startswith("edited user message")


def test_truncation_shift():
    long = msgs(extra=[{"role": "user", "content": "filler " * 80}, {"role": "assistant", "content": "ok " * 80}])
    roomy = settings(policy=PolicySettings("drop-oldest", context_window=10_000))
    tight = settings(policy=PolicySettings("drop-oldest", context_window=200))
    view = pair(long, long, roomy, tight)
    assert view.ledger and view.prefix.cause.startswith("truncation shift")


def test_changed_tool_list():
    tool = {"type": "function", "function": {"name": "f", "description": "d", "parameters": {"type": "object"}}}
    view = pair(msgs(), msgs(), settings("qwen3"), settings("qwen3", tools=[tool]))
    assert view.prefix.cause == "changed tool list"


def test_template_variable_date():
    view = pair(msgs(), msgs(), settings("llama3", variables={"date_string": "01 Jan 2025"}),
                settings("llama3", variables={"date_string": "02 Jan 2025"}))
    assert view.prefix.cause == "template variable changed: date_string"
    gpt = pair(msgs(), msgs(), settings("harmony", variables={"current_date": "2025-01-01"}),
               settings("harmony", variables={"current_date": "2025-01-02"}))
    assert gpt.prefix.cause == "template variable changed: current_date"


def test_provider_rules():
    assert predict_cached("openai", 1023, 5000) == 0
    assert predict_cached("openai", 1024, 5000) == 1024
    assert predict_cached("openai", 1151, 5000) == 1024 and predict_cached("openai", 1152, 5000) == 1152
    assert predict_cached("llama.cpp", 316, 316) == 315  # the last prompt token is always evaluated again
    assert predict_cached("llama.cpp", 10, 50) == 10


def test_prefix_helpers():
    assert common_prefix_length("abcdef", "abcxyz") == 3 and common_prefix_length("", "x") == 0
    assert common_prefix_length("same", "same") == 4


def test_token_index_counts_tokens_that_end_before_a_boundary():
    view = build_request(msgs(first="Hello world, a longer first question"), settings())
    document = view.document
    index = token_index(document, get_tokenizer("o200k_base"), builtin_template("chatml").special_strings())
    assert index.total == view.snapshot.counts.total
    running = 0
    for span in document.spans:  # here no token straddles a span boundary, so the two must agree
        running += span.tokens
        assert index.tokens_before(span.end) == running, document.span_text(span)
    assert index.tokens_before(0) == 0
    inside = document.spans[1]  # mid-way through the system prompt: the token there is not yet complete
    assert index.tokens_before(inside.start + 1) == index.tokens_before(inside.start)


def post(url, body):
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


@pytest.mark.server
def test_predicted_cache_matches_llamacpp_over_six_requests(llama_server):
    template = load_template(str(DATA / "templates" / "qwen3-server.jinja"))
    setup = RequestSettings(template, get_tokenizer("qwen3"))
    rules = " ".join(f"Rule {i}: answer briefly and cite the manual." for i in range(30))

    def send(messages):
        reply = post(llama_server + "/chat/completions",
                     {"messages": [m.to_wire() for m in messages], "max_tokens": 4, "temperature": 0})
        return reply["choices"][0]["message"]["content"], reply["timings"]["cache_n"], reply["usage"]["prompt_tokens"]

    # A priming request puts a known prompt in the server's single slot.
    history = [message_from_dict({"role": "system", "content": "Priming. " + rules}, 0),
               message_from_dict({"role": "user", "content": "prime"}, 1)]
    previous = build_request(history, setup).shape
    send(history)
    history = [message_from_dict({"role": "system", "content": "System prompt at 10:00. " + rules}, 0)]
    results = []
    for number, question in enumerate(["What is A?", "And B?", "Then C?", "CHANGE", "What is E?", "And F?"], 1):
        if question == "CHANGE":  # a timestamp in the system prompt moves: the cache breaks near the start
            history[0] = message_from_dict({"role": "system", "content": "System prompt at 10:05. " + rules}, 0)
            question = "What is D?"
        history.append(message_from_dict({"role": "user", "content": question}, len(history)))
        view = build_request(history, setup, previous, number)
        answer, cache_n, prompt_tokens = send(history)
        assert view.sent_tokens == prompt_tokens
        results.append((number, view.prefix.predicted_cached, cache_n, view.prefix.cause))
        history.append(message_from_dict({"role": "assistant", "content": answer}, len(history)))
        previous = view.shape
    print("request, predicted cached, reported cache_n, cause:", *results, sep="\n  ")
    for _number, predicted, reported, _cause in results:
        assert abs(predicted - reported) <= 1, results
    assert results[3][3].startswith("changed system prompt") and results[3][2] < 20, results
    assert all(r[2] > 100 for i, r in enumerate(results) if i not in (0, 3)), results


def test_span_diff_names_what_changed():
    first = build_request(msgs(first="Hi"), settings())
    edited = build_request(msgs(first="Hello there"), settings(), previous=first.shape)
    rows = span_diff(first.shape, edited.shape)
    changed = [r for r in rows if r["status"] in ("changed", "new")]
    assert [(r["message"], r["kind"], r["text"]) for r in changed] == [("m1", "content", "Hello there")]
    assert [(r["message"], r["text"]) for r in rows if r["status"] == "gone"] == [("m1", "Hi")]
    assert rows[0]["status"] == "same" and rows[0]["tokens"] > 0
    grown = build_request(msgs(extra=[{"role": "user", "content": "more"}]), settings(), previous=first.shape)
    assert {r["message"] for r in span_diff(first.shape, grown.shape)
            if r["status"] in ("new", "changed")} >= {"m3", "m4"}
    assert all(r["status"] == "new" for r in span_diff(None, first.shape))
