"""The HTTP client against a misbehaving loopback server: typed errors, nothing received lost."""

import asyncio
import socket

import pytest

from fault_server import FaultServer
from tui.client.endpoint import Endpoint, EndpointError, normalise_base_url
from tui.client.errors import (AuthFailed, ClientError, ConnectionFailed, ConnectTimedOut, ContextOverflow, MalformedChunk,
                               NameNotResolved, NotFound, RateLimited, ReadTimedOut, ServerFailed,
                               StreamErrorEvent, StreamIncomplete, TLSFailed)
from tui.client.http import Limits, OpenAIClient
from tui.client.reply import ReplyAssembler
from waiting import eventually

BODY = {"model": "fault-model", "messages": [{"role": "user", "content": "hi"}], "stream": True}
KEY = "sk-test-SECRET-0123456789"


@pytest.fixture()
def server():
    with FaultServer() as running:
        yield running


def client_for(url, key=KEY, **limits):
    endpoint = Endpoint(url, "fault-model", "CTXPANE_TEST_KEY", key)
    return OpenAIClient(endpoint, Limits(**{"connect": 2.0, "read": 5.0, **limits}), sleep=_no_sleep)


async def _no_sleep(seconds):  # the client's backoff, noted instead of waited (one loop turn)
    _no_sleep.waits.append(seconds)
    await asyncio.sleep(0)


_no_sleep.waits = []


@pytest.mark.parametrize("given", ["http://h:1", "http://h:1/", "http://h:1/v1", "http://h:1/v1/", "h:1"])
def test_base_url_forms(given):
    assert normalise_base_url(given) == "http://h:1/v1"


def test_base_url_rejects_non_http():
    with pytest.raises(EndpointError):
        normalise_base_url("ftp://h/x")


def test_key_never_in_repr():
    assert KEY not in repr(Endpoint("http://h:1", "m", "X", KEY))


async def test_stream_assembles_everything(server):
    deltas = []
    async with client_for(server.url + "/ok") as client:
        reply = await client.chat(BODY, on_delta=lambda text, _: deltas.append(text))
    assert reply.content == "Hello, wörld 👋" and "".join(deltas) == reply.content
    assert reply.reasoning == "Let me think."
    assert [c["function"]["name"] for c in reply.tool_calls] == ["get_weather", "get_time"]
    assert reply.tool_calls[0]["function"]["arguments"] == '{"city": "Paris"}'
    assert reply.tool_calls[0]["id"] == "call_a"
    assert reply.finish_reason == "tool_calls" and not reply.incomplete
    assert reply.cached_tokens == 5 and reply.prompt_tokens == 12
    assert reply.timings["predicted_per_second"] == 321.0
    sent = server.requests[-1]
    assert sent["body"]["stream_options"] == {"include_usage": True}
    assert sent["headers"]["Authorization"] == f"Bearer {KEY}"


async def test_non_streaming(server):
    async with client_for(server.url + "/ok") as client:
        reply = await client.chat({**BODY, "stream": False})
        models = await client.list_models()
    assert reply.content == "whole reply" and reply.prompt_tokens == 3
    assert models == ["fault-model"]


async def test_sse_crlf_comments_and_multiline_data(server):
    async with client_for(server.url + "/crlf") as client:
        reply = await client.chat(BODY)
    assert reply.content == "multi line" and reply.finish_reason == "stop"


@pytest.mark.parametrize("scenario,error,needle", [
    ("cut", StreamIncomplete, "closed the connection mid-reply"),
    ("nodone", StreamIncomplete, "no [DONE]"),
    ("garbage", MalformedChunk, "not JSON"),
    ("errevent", StreamErrorEvent, "model crashed"),
])
async def test_stream_faults_keep_what_arrived(server, scenario, error, needle):
    assembler = ReplyAssembler()
    async with client_for(server.url + f"/{scenario}") as client:
        with pytest.raises(error) as info:
            await client.chat(BODY, assembler)
    assert needle in str(info.value)
    assert info.value.partial.content == "partial reply kept" == assembler.reply.content
    assert info.value.partial.incomplete


async def test_read_timeout_keeps_partial(server):
    server.httpd.delay = 0.5
    async with client_for(server.url + "/slow", read=0.3) as client:
        with pytest.raises(ReadTimedOut) as info:
            await client.chat(BODY)
    assert info.value.partial.content.startswith("partial")
    assert "read timeout" in str(info.value)


async def test_cancel_closes_at_once_and_keeps_partial(server):
    server.httpd.delay = 0.2
    assembler = ReplyAssembler()
    async with client_for(server.url + "/slow") as client:
        task = asyncio.create_task(client.chat(BODY, assembler))
        await eventually(lambda: assembler.reply.content, 10, "the first piece of the reply")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert assembler.reply.content.startswith("partial") and assembler.reply.incomplete


async def test_rate_limit_retries_then_succeeds(server):
    statuses, _no_sleep.waits[:] = [], []
    async with client_for(server.url + "/ratelimit") as client:
        reply = await client.chat(BODY, on_status=statuses.append)
    assert reply.content == "Hello, wörld 👋"
    assert len(statuses) == 2 and "retry 1/3" in statuses[0] and "429" in statuses[0]
    assert _no_sleep.waits == [0.0, 0.0]  # Retry-After: 0 honoured


async def test_busy_gives_up_after_bounded_retries(server):
    _no_sleep.waits[:] = []
    async with client_for(server.url + "/busy", retries=2) as client:
        with pytest.raises(RateLimited) as info:
            await client.chat(BODY)
    assert info.value.status == 503 and info.value.retry_after == 7.0
    assert _no_sleep.waits == [7.0, 7.0]
    assert sum(1 for r in server.requests if r["path"].startswith("/busy")) == 3


async def test_auth_error_names_the_variable_and_hides_the_key(server):
    async with client_for(server.url + "/auth") as client:
        with pytest.raises(AuthFailed) as info:
            await client.chat(BODY)
    assert "$CTXPANE_TEST_KEY" in str(info.value) and KEY not in str(info.value)
    async with client_for(server.url + "/auth", key=None) as client:
        with pytest.raises(AuthFailed, match="no key was sent"):
            await client.chat(BODY)


async def test_404_overflow_500(server):
    async with client_for(server.url + "/missing") as client:
        with pytest.raises(NotFound, match="base URL"):
            await client.chat(BODY)
    async with client_for(server.url + "/overflow") as client:
        with pytest.raises(ContextOverflow) as info:
            await client.chat(BODY)
    assert (info.value.n_prompt_tokens, info.value.n_ctx) == (9009, 8192)
    assert "9009 prompt tokens, context window 8192" in str(info.value)
    async with client_for(server.url + "/boom") as client:
        with pytest.raises(ServerFailed, match="internal failure in the sampler"):
            await client.chat(BODY)


async def test_connection_refused():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, never listening: refused
        async with client_for(f"http://127.0.0.1:{port}") as client:
            with pytest.raises(ConnectionFailed, match="is the server running"):
                await client.chat(BODY)


async def test_name_not_resolved():
    async with client_for("http://no-such-host.invalid:8080") as client:
        with pytest.raises(NameNotResolved, match="cannot resolve"):
            await client.chat(BODY)


async def test_tls_failure(server):
    async with client_for(server.url.replace("http://", "https://") + "/ok") as client:
        with pytest.raises(TLSFailed, match="TLS"):
            await client.chat(BODY)


async def test_connect_timeout():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers = []
    try:
        for _ in range(8):  # fill the accept queue so the next handshake is never answered
            filler = socket.socket()
            filler.setblocking(False)
            filler.connect_ex(("127.0.0.1", port))
            fillers.append(filler)
        async with client_for(f"http://127.0.0.1:{port}", connect=0.5) as client:
            with pytest.raises((ConnectTimedOut, ReadTimedOut)) as info:
                await client.chat(BODY)
        assert "timed out" in str(info.value) or "read timeout" in str(info.value)
    finally:
        for filler in fillers:
            filler.close()
        listener.close()


async def test_a_redirect_to_another_host_is_not_followed_with_the_conversation(server):
    """Issue 26: the chat body followed a 307 to another host (the key did not): now neither does."""
    with FaultServer(host="127.0.0.2") as other:
        server.httpd.redirect_to = other.url
        async with client_for(server.url + "/redirect") as client:
            with pytest.raises(ClientError, match="not followed"):
                await client.chat(BODY)
        assert other.requests == []


async def test_forbidden_names_the_variable(server):
    async with client_for(server.url + "/forbidden") as client:
        with pytest.raises(AuthFailed) as info:
            await client.chat(BODY)
    assert info.value.status == 403 and "$CTXPANE_TEST_KEY" in str(info.value) and KEY not in str(info.value)


async def test_waiting_for_retry_after_is_cancellable(server):
    endpoint = Endpoint(server.url + "/busy", "fault-model", "CTXPANE_TEST_KEY", KEY)
    statuses = []
    async with OpenAIClient(endpoint, Limits(connect=2.0, read=5.0)) as client:  # the real asyncio.sleep
        task = asyncio.create_task(client.chat(BODY, on_status=statuses.append))
        await eventually(lambda: statuses, 10, "the wait for Retry-After to be said")
        started = asyncio.get_running_loop().time()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert asyncio.get_running_loop().time() - started < 1.0  # not the 7 s Retry-After
    assert "Retry-After 7s" in statuses[0] and "Esc cancels" in statuses[0]
