"""The client against servers that misbehave on purpose (real loopback sockets).

Each kind of misbehaviour must end in a ClientError a person can read, with the reply that had
arrived kept and marked incomplete, within bounded memory and time. Before the schemas and bounds,
the wrong chunk shapes raised AttributeError/TypeError, the long line and the huge error body were
buffered whole, the keep-alive and trickling servers held the reply open for ever, and the probes
int()-ed what they were given.
"""

import json
import re
import socket
import time
import tracemalloc

import pytest

from fault_server import FaultServer
from tui.client.connect import scan_local
from tui.client.endpoint import Endpoint
from tui.client.errors import (BadRequest, ClientError, MalformedAnswer, MalformedChunk, ReadTimedOut, ServerFailed,
                               StreamIncomplete, TokenizerUnavailable, TooLarge)
from tui.client.http import Limits, OpenAIClient
from tui.client.reply import ReplyAssembler
from tui.client.server_info import probe
from tui.client.server_tokenizer import ServerTokenizer
from tui.client.sse import SSEParser, SSETooLarge

BODY = {"model": "fault-model", "messages": [{"role": "user", "content": "hi"}], "stream": True}
KEY = "sk-test-HOSTILE-0123456789abcdef"
KEPT = "partial reply kept"
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


@pytest.fixture()
def server():
    with FaultServer(delay=0.05) as running:
        yield running


def client_for(url, **limits):
    endpoint = Endpoint(url, "fault-model", "CTXPANE_TEST_KEY", KEY)
    return OpenAIClient(endpoint, Limits(**{"connect": 2.0, "read": 5.0, **limits}))


async def stream_error(url, **limits):
    """The error a streamed chat raises, and the assembler that saw the reply."""
    assembler = ReplyAssembler()
    async with client_for(url, **limits) as client:
        with pytest.raises(ClientError) as info:
            await client.chat(BODY, assembler)
    return info.value, assembler


def assert_kept(error, assembler, content=KEPT):
    assert error.partial is assembler.reply
    assert assembler.reply.content == content and assembler.reply.incomplete
    assert KEY not in str(error) and not UNSAFE.search(str(error))


# -- wrong shapes -----------------------------------------------------------------------------
@pytest.mark.parametrize("scenario,where", [
    ("choicestr", "$.choices[0]"),  # {"choices": ["x"]}: AttributeError before
    ("contentnum", "$.choices[0].delta.content"),  # content 5: TypeError before
    ("usagelist", "$.usage"),  # {"usage": [1]}: accepted and broke cached_tokens later
    ("notobject", "Expected `object`"),
    ("badindex", "tool_calls[0].index"),
    ("finishnum", "finish_reason"),
    ("bigint", "out of range"),
    ("deep", "nested too deeply"),
    ("garbage", "not JSON"),
])
async def test_wrong_chunk_shapes_keep_the_partial_reply(server, scenario, where):
    error, assembler = await stream_error(server.url + f"/{scenario}")
    assert type(error) is MalformedChunk
    assert where in str(error) and f"kept the {len(KEPT)} characters" in str(error)
    assert_kept(error, assembler)


async def test_a_negative_usage_figure_keeps_the_reply_and_is_not_reported(server):
    """A usage figure out of bounds is not a broken reply: it is not used, and said so (usage_checks)."""
    from tui.client.figures import reported_from_reply
    async with client_for(server.url + "/negusage") as client:
        reply = await client.chat(BODY)
    reported = reported_from_reply(reply)
    assert reported.prompt_tokens is None
    assert reported.unreported == ("usage.prompt_tokens: not reported (negative (-3))",)


async def test_unknown_fields_are_ignored(server):
    async with client_for(server.url + "/addedfields") as client:
        reply = await client.chat(BODY)
    assert reply.content == KEPT and reply.finish_reason == "stop" and not reply.incomplete
    assert reply.usage == {"prompt_tokens": 4, "completion_tokens": 3, "total_tokens": 7}
    assert reply.timings == {"cache_n": 1} and reply.cached_tokens == 1
    async with client_for(server.url + "/bigextra") as client:
        assert (await client.chat(BODY)).content == KEPT


async def test_invalid_utf8_is_replaced_not_fatal(server):
    async with client_for(server.url + "/badutf8") as client:
        reply = await client.chat(BODY)
    assert reply.content == KEPT + "\ufffd\ufffd!"


# -- sizes -----------------------------------------------------------------------------------------
async def test_a_100_mb_line_without_newline_stops_at_the_bound(server):
    tracemalloc.start()
    try:
        error, assembler = await stream_error(server.url + "/longline")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert type(error) is TooLarge and "without ending" in str(error)
    assert_kept(error, assembler)
    assert peak < 48 * 2**20, f"{peak / 2**20:.0f} MiB held for a line bounded at 8 MiB characters"
    server.wait_handled()  # its handler ended: it wrote all it could before it found the client gone
    assert server.httpd.counters["written"] < 60 * 2**20  # the client hung up long before 100 MB


async def test_a_reply_past_its_bound_stops(server):
    error, assembler = await stream_error(server.url + "/manyreply", max_reply=50_000)
    assert type(error) is TooLarge and "50,000 characters" in str(error)
    assert 50_000 < len(assembler.reply.content) < 52_000 and assembler.reply.incomplete


async def test_a_stream_past_its_byte_bound_stops(server):
    error, assembler = await stream_error(server.url + "/manyreply", max_stream=200_000)
    assert type(error) is TooLarge and "200,000 bytes" in str(error)
    assert assembler.reply.content.startswith(KEPT) and assembler.reply.incomplete


async def test_a_huge_error_body_is_read_only_in_part(server):
    tracemalloc.start()
    try:
        error, assembler = await stream_error(server.url + "/hugeerror")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert type(error) is ServerFailed and error.status == 500
    assert len(str(error)) <= 2000 and "EEEE" in str(error)
    assert peak < 16 * 2**20
    server.wait_handled()
    assert server.httpd.counters.get("written", 0) < 50 * 2**20


async def test_an_error_body_with_markup_and_escapes_is_plain_short_text(server):
    error, _ = await stream_error(server.url + "/markup")
    assert type(error) is BadRequest
    text = str(error)
    assert "[@click=app.bell]x[/]" in text  # kept as text: the screen shows it without parsing markup
    assert not UNSAFE.search(text) and "\x1b" not in repr(error)
    assert len(text) <= 2000 and "…" in text


async def test_an_answer_of_a_million_models_is_refused(server):
    async with client_for(server.url + "/manymodels") as client:
        with pytest.raises(TooLarge, match="limit is 8,388,608"):
            await client.list_models()
        with pytest.raises(TooLarge):
            await probe(client)


@pytest.mark.parametrize("scenario,needle", [("toomany", "length <= 10000"), ("longid", "length <= 512"),
                                             ("vllmbad", "max_model_len")])
async def test_model_lists_out_of_bounds(server, scenario, needle):
    async with client_for(server.url + f"/{scenario}") as client:
        with pytest.raises(MalformedAnswer, match=re.escape(needle)):
            await probe(client)


# -- time -----------------------------------------------------------------------------------------
async def test_a_stream_that_never_ends_times_out_between_chunks(server):
    started = time.monotonic()
    error, assembler = await stream_error(server.url + "/forever", read=0.5)
    assert type(error) is ReadTimedOut and "keep-alives" in str(error)
    assert_kept(error, assembler)
    assert time.monotonic() - started < 3.0  # pings every 20 ms never reset the 0.5 s bound


async def test_a_slowloris_stream_times_out(server):
    server.httpd.delay = 0.1  # each byte well inside the 0.6 s read timeout: httpx alone never fires
    started = time.monotonic()
    error, assembler = await stream_error(server.url + "/trickle", read=0.6)
    assert type(error) is ReadTimedOut
    assert_kept(error, assembler)
    assert time.monotonic() - started < 3.0


@pytest.mark.parametrize("call", ["chat", "models"])
async def test_a_slowloris_answer_times_out(server, call):
    server.httpd.delay = 0.1
    url = server.url + ("/trickleonce" if call == "chat" else "/tricklemodels")
    started = time.monotonic()
    async with client_for(url, read=0.6) as client:
        with pytest.raises(ReadTimedOut, match="whole answer"):
            await (client.chat({**BODY, "stream": False}) if call == "chat" else client.list_models())
    assert time.monotonic() - started < 3.0


# -- lies ----------------------------------------------------------------------------------------------
async def test_content_length_longer_than_the_body(server):
    async with client_for(server.url + "/shortlength") as client:
        with pytest.raises(StreamIncomplete, match="closed the connection"):
            await client.chat({**BODY, "stream": False})


async def test_content_length_shorter_than_the_body(server):
    async with client_for(server.url + "/longlength") as client:
        with pytest.raises(MalformedAnswer, match="not JSON"):
            await client.chat({**BODY, "stream": False})


async def test_content_length_that_ends_a_stream_early(server):
    error, assembler = await stream_error(server.url + "/streamlength")
    assert type(error) is StreamIncomplete and "no [DONE]" in str(error)
    assert_kept(error, assembler)


async def test_a_200_answer_that_is_an_error(server):
    async with client_for(server.url + "/error200") as client:
        with pytest.raises(ServerFailed, match="model not loaded") as info:
            await client.chat({**BODY, "stream": False})
    assert "\x1b" not in str(info.value)


# -- probes ---------------------------------------------------------------------------------------------
async def test_scanning_local_ports_reads_no_body_and_sends_no_key(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    port = server.httpd.server_address[1]
    assert await scan_local(((closed_port(), "none"), (port, "fault"))) == (f"http://127.0.0.1:{port}/v1", "fault")
    assert server.requests and all("Authorization" not in r["headers"] for r in server.requests)


async def test_props_with_a_string_n_ctx(server):
    async with client_for(server.url + "/strctx") as client:
        with pytest.raises(MalformedAnswer) as info:
            await probe(client)
    assert "/props" in str(info.value) and "$.default_generation_settings.n_ctx" in str(info.value)


async def test_ollama_context_length_of_5000_digits(server):
    async with client_for(server.url + "/ollamabig") as client:
        with pytest.raises(MalformedAnswer) as info:
            await probe(client)
    assert "/api/show" in str(info.value) and "out of range" in str(info.value)
    assert len(str(info.value)) < 400


async def test_a_web_page_on_every_path_is_an_unknown_server_not_an_error(server):
    async with client_for(server.url + "/webpage") as client:
        info = await probe(client)
    assert info.kind == "openai-compatible" and info.model == "fault-model"


async def test_a_well_formed_llamacpp_is_still_found(server):
    async with client_for(server.url + "/llama") as client:
        info = await probe(client)
    assert (info.kind, info.n_ctx, info.eos_token) == ("llama.cpp", 4096, "</s>")


# -- the server tokenizer ------------------------------------------------------------------------------
class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_tokenizer_server_gone_is_a_value_with_a_retry_time_then_recovers():
    port, clock = closed_port(), Clock()
    tokenizer = ServerTokenizer(Endpoint(f"http://127.0.0.1:{port}/llama"), clock=clock)
    try:
        with pytest.raises(TokenizerUnavailable) as info:  # httpx.ConnectError escaped here before
            tokenizer.plain_starts("hello")
        assert not tokenizer.healthy and info.value.retry_at == tokenizer.retry_at == clock.now + 2.0
        assert "cannot connect" in str(info.value) and "estimate" in str(info.value)
        clock.now += 2.5
        assert tokenizer.usable() and not tokenizer.ping()
        assert tokenizer.retry_at == clock.now + 4.0  # backing off
        with FaultServer(port=port) as back:  # the server comes back on its port
            with pytest.raises(TokenizerUnavailable):  # inside the back-off: fails at once, no request
                tokenizer.special_count("hello")
            assert back.requests == [] and not tokenizer.usable()
            clock.now += 5.0
            assert tokenizer.ping() and tokenizer.healthy and len(back.requests) == 1
            starts, exact = tokenizer.plain_starts("héllo")
            assert list(starts) == [0, 1, 3, 4, 5] and exact
    finally:
        tokenizer.close()


@pytest.mark.parametrize("scenario,needle", [("tokbad", "wrong shape"), ("tokslow", "longer than"),
                                             ("missing", "404")])
def test_tokenizer_bad_answers_are_values(server, scenario, needle):
    server.httpd.delay = 0.05
    tokenizer = ServerTokenizer(Endpoint(server.url + f"/{scenario}"), timeout=0.3)
    try:
        started = time.monotonic()
        with pytest.raises(TokenizerUnavailable, match=needle):
            tokenizer.encode_whole("abc")
        assert time.monotonic() - started < 2.0 and not tokenizer.healthy
    finally:
        tokenizer.close()


# -- the SSE parser ------------------------------------------------------------------------------------
def events(parser, *pieces):
    found = [e for piece in pieces for e in parser.feed(piece)]
    return [(e.event, e.data) for e in found + list(parser.close())]


def test_sse_line_ends_split_across_chunks():
    assert events(SSEParser(), b"data: a\r", b"\ndata: b\r", b"\r") == [("message", "a\nb")]
    assert events(SSEParser(), b"event: x\rdata: 1\r\r", b"data: 2\n\n") == [("x", "1"), ("message", "2")]
    assert events(SSEParser(), b"data: \xc3", b"\xa9\n\n") == [("message", "é")]
    assert events(SSEParser(), b"data: cut") == []  # an unfinished event at the end is dropped


def test_sse_line_bound_holds_across_chunks_and_within_one():
    parser = SSEParser(max_line=1000)
    with pytest.raises(SSETooLarge):
        for _ in range(20):
            list(parser.feed(b"x" * 100))
    with pytest.raises(SSETooLarge):
        list(SSEParser(max_line=1000).feed(b"data: " + b"y" * 2000 + b"\n\n"))
    with pytest.raises(SSETooLarge, match="data"):  # many short data lines make one big event
        list(SSEParser(max_line=1000).feed(b"data: zzzzzzzzz\n" * 200))
    assert events(SSEParser(max_line=1000), b"data: " + b"y" * 900 + b"\n\n")[0][1] == "y" * 900


def test_a_big_chunk_of_small_events_yields_every_event_once():
    """A chunk that holds thousands of events (a buffering server): each comes out once, whole, in order. How its
    cost grows with the chunk's size is a benchmark: tests/benchmarks/bench_sse.py."""
    events = [("data: " + json.dumps({"choices": [{"delta": {"content": f"t{n}"}}]}) + "\n\n").encode()
              for n in range(20_000)]
    parsed = [json.loads(event.data)["choices"][0]["delta"]["content"] for event in SSEParser().feed(b"".join(events))]
    assert parsed == [f"t{n}" for n in range(20_000)]
