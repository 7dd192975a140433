"""Cache prediction against the real llama.cpp server: slots and host-memory prompt cache.

Each test starts its own server (its own port, a known empty cache) and sends a sequence that returns
to earlier conversations. The model (tui/context/cache/llamacpp.py) is built from what the client
reads of /props and /slots, fed with each request and the server's figures, and must predict the
server's `timings.cache_n` within one token on every request.
"""

from __future__ import annotations

import asyncio
import json
import urllib.request

import pytest

from conftest import DATA, start_llama_server
from tui.client.endpoint import Endpoint
from tui.client.http import OpenAIClient
from tui.client.server_cache import read_cache_facts
from tui.context import get_tokenizer, load_template, message_from_dict
from tui.context.cache.predict import cache_prefix
from tui.context.cache.predict import cache_report, held_prompt
from tui.context.cache.llamacpp import LlamaCppCache
from tui.context.request import RequestSettings, build_request

pytestmark = pytest.mark.server


def post(url: str, body: dict) -> dict:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def facts(url: str):
    async def read():
        async with OpenAIClient(Endpoint(url, "tiny-qwen3")) as client:
            return await read_cache_facts(client)
    return asyncio.run(read())


class Session:
    """Conversations sent to one server through the engine, each prediction kept beside the server's figure."""

    def __init__(self, url: str, model: LlamaCppCache, raw_replies: bool = False, keep_tokens: bool = True):
        self.url, self.model, self.raw_replies, self.keep_tokens = url, model, raw_replies, keep_tokens
        self.settings = RequestSettings(load_template(str(DATA / "templates" / "qwen3-server.jinja")),
                                        get_tokenizer("qwen3"))
        self.number, self.rows, self.previous, self.reports = 0, [], None, []

    def send(self, name: str, history: list[dict], question: str) -> None:
        history.append({"role": "user", "content": question})
        messages = [message_from_dict(item, i) for i, item in enumerate(history)]
        self.number += 1
        view = build_request(messages, self.settings, request_number=self.number, server=self.model)
        reply = post(self.url + "/chat/completions", {"messages": [m.to_wire() for m in messages], "max_tokens": 4,
                                                      "temperature": 0, "logprobs": True})
        choice, usage, timings = reply["choices"][0], reply["usage"], reply["timings"]
        assert view.sent_tokens == usage["prompt_tokens"], name
        pieces = [bytes(entry["bytes"]).decode("utf-8", "replace") for entry in choice["logprobs"]["content"]]
        content = "".join(pieces) if self.raw_replies else choice["message"]["content"]
        record = {"content": content, "generated": pieces} if self.keep_tokens else {"content": content}
        report = cache_report(view.prefix, timings["cache_n"], view.shape, view.document, usage["prompt_tokens"])
        previous_only = cache_prefix(self.previous, view.shape, view.document).predicted_cached  # the old rule
        self.reports.append(report)
        self.rows.append((name, view.prefix.predicted_cached, timings["cache_n"], view.prefix.source,
                          view.prefix.place, view.prefix.cause_class, report.agrees, previous_only))
        self.previous = view.shape
        self.last = held_prompt(self.number, view.shape, record, usage, timings)
        self.model.record(self.last)
        history.append({"role": "assistant", "content": content})

    def check(self) -> None:
        print("request, predicted, server cache_n, source, place, cause, agrees, previous-only rule:", *self.rows,
              sep="\n  ")
        for row in self.rows:
            assert abs(row[1] - row[2]) <= 1 and row[6], self.rows


def system(topic: str, stamp: str = "10:00") -> dict:
    rules = " ".join(f"Rule {i}: answer briefly about {topic} and cite manual {i}." for i in range(25))
    return {"role": "system", "content": f"System prompt at {stamp}. {rules}"}


@pytest.fixture(scope="module")
def one_slot():
    url, stop = start_llama_server(LLAMA_PARALLEL="1", LLAMA_CTX="8192")
    yield url
    stop()


@pytest.fixture(scope="module")
def two_slots():
    url, stop = start_llama_server(LLAMA_PARALLEL="2", LLAMA_CTX="8192")
    yield url
    stop()


def sequence(session: Session) -> None:
    """A1 A2 B1 B2 A3 (extends A2), C1 (A with a new system prompt), B3 (extends B2), A4 (extends A3)."""
    a, b = [system("apples")], [system("bananas")]
    session.send("A1", a, "What is A?")
    session.send("A2", a, "And then?")
    session.send("B1", b, "What is B?")
    session.send("B2", b, "More on B?")
    session.send("A3", a, "Back to A?")
    session.send("C1", [system("apples", "10:05"), *a[1:]], "Same, later?")
    session.send("B3", b, "Back to B?")
    session.send("A4", a, "Once more A?")


def test_returning_to_earlier_conversations_one_slot(one_slot):
    found = facts(one_slot)
    assert found.total_slots == 1 and found.n_ctx == 8192 and len(found.slots) == 1
    session = Session(one_slot, LlamaCppCache(found.config()))
    sequence(session)
    session.check()
    rows = {row[0]: row for row in session.rows}
    # going back to A after B reuses A2's prompt from the host cache, not the slot's B2
    assert rows["A3"][3] == 2 and rows["A3"][4].startswith("prompt cache") and rows["A3"][2] > 400
    assert rows["A3"][7] < 30  # comparing with the previous request only (B2) missed it: the 724 vs 232
    assert rows["B3"][3] == 4 and rows["B3"][2] > 400
    assert rows["C1"][5] == "system prompt" and rows["C1"][2] < 20
    assert rows["A2"][5] == "reply re-rendered"  # the server strips the reply's leading space
    assert found.compare(session.model) == []  # /slots agrees with the model's slot


def test_returning_to_earlier_conversations_two_slots(two_slots):
    found = facts(two_slots)
    assert found.total_slots == 2 and len(found.slots) == 2
    session = Session(two_slots, LlamaCppCache(found.config()))
    sequence(session)
    session.check()
    rows = {row[0]: row for row in session.rows}
    assert rows["B1"][2] == 0  # B takes the empty second slot
    # A3 finds A2 still in its slot; C1 takes the least recently used slot (B's), so B3 comes back from the cache
    assert rows["A3"][4] == "slot 0" and rows["C1"][4] == "slot 1" and rows["B3"][4].startswith("prompt cache")
    assert found.compare(session.model) == []


def test_replies_resent_as_generated_are_reused(one_slot):
    """A client that sends back the reply exactly as generated gets its tokens from the cache (all but the last)."""
    session = Session(one_slot, LlamaCppCache(facts(one_slot).config()), raw_replies=True)
    session.send("prime", [system("pears")], "Unrelated priming question?")  # our own prompt in the slot
    history = [system("cherries")]
    for number, question in enumerate(["First?", "Second?", "Third?"]):
        session.send(f"D{number + 1}", history, question)
    session.rows = session.rows[1:]
    session.check()
    assert all(row[5] == "appended" for row in session.rows[1:]), session.rows


def test_without_the_generated_tokens_the_report_names_the_reply(one_slot):
    """Without logprobs the reply's text stands for its tokens; this server strips the leading space of the
    first one, so the prediction counts 3 reply tokens the server did not reuse, and the report says so."""
    session = Session(one_slot, LlamaCppCache(facts(one_slot).config()), keep_tokens=False)
    session.send("prime", [system("plums")], "Priming?")
    talk = [system("kiwis")]
    session.send("E1", talk, "First?")
    session.send("E2", talk, "Second?")
    predicted, reported, report = session.rows[-1][1], session.rows[-1][2], session.reports[-1]
    assert predicted - reported == 3 and not report.agrees  # the 3 " hello" tokens the slot keeps of 4
    assert report.cause_class == "reply re-rendered" and "logprobs" in report.explanation


def test_prompt_cache_token_limit_drops_the_oldest_prompt():
    """With --cache-ram -1 the host cache keeps at most n_ctx tokens: going back to the first of five
    conversations finds it dropped, as the model predicts (its entry is gone from the candidates)."""
    url, stop = start_llama_server(LLAMA_PARALLEL="1", LLAMA_CTX="1024", LLAMA_SERVER_ARGS="--cache-ram -1")
    try:
        found = facts(url)
        assert found.n_ctx == 1024
        session = Session(url, LlamaCppCache(found.config(cache_ram_mib=-1)))
        talks = {topic: [system(topic)] for topic in ("apples", "bananas", "cherries", "dates", "figs")}
        for topic in [*talks, "apples", "figs"]:
            session.send(topic, talks[topic], "Q?")
        session.check()
        back = session.rows[5]
        assert back[2] < 30 and back[3] != 1, session.rows  # apples' first prompt was dropped: only a shared head
        assert session.rows[6][2] > 300 and session.rows[6][3] == 5  # figs, still held, is reused
    finally:
        stop()
