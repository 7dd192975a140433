"""The API key goes only to the address the user chose, only to its origin, and never into a message.

Before: `Endpoint.from_env` attached the key to whatever base URL it was given (the app gives it the
one found in a session file), redirects kept it for any URL with the same host:port text whatever
the scheme, and a server's error message quoting the key reached the user unredacted.
"""

import logging

import pytest

from fault_server import FaultServer
from tui.client.connect import connect
from tui.client.endpoint import Endpoint, endpoint_for, key_source, origin_of
from tui.client.errors import AuthFailed, ClientError, MalformedAnswer, StreamErrorEvent
from tui.client.http import Limits, OpenAIClient
from tui.client.server_info import probe
from tui.client.server_tokenizer import ServerTokenizer

KEY = "sk-test-SCOPE-0123456789abcdefXYZ"
BODY = {"model": "fault-model", "messages": [{"role": "user", "content": "hi"}], "stream": True}


@pytest.fixture()
def server():
    with FaultServer(delay=0.05) as running:
        yield running


@pytest.fixture()
def key_in_env(monkeypatch):
    monkeypatch.setenv("CTXPANE_SCOPE_KEY", KEY)


def authorised(requests):
    return [r for r in requests if any(h.lower() == "authorization" for h in r["headers"])]


# -- where the address came from ----------------------------------------------------------------------
@pytest.mark.parametrize("source", ["flag", "env", "$OPENAI_BASE_URL", "config", "config.toml", "user"])
def test_chosen_addresses_hold_the_key(key_in_env, source):
    endpoint = endpoint_for("http://h:1", source, key_env="CTXPANE_SCOPE_KEY")
    assert endpoint.key_allowed and endpoint.has_key and not endpoint.key_withheld
    assert endpoint.auth_headers() == {"Authorization": f"Bearer {KEY}"}


@pytest.mark.parametrize("source", ["session", "import", "server", "scan", "found llama.cpp on http://x", "", "?"])
def test_suggested_addresses_never_hold_the_key(key_in_env, source):
    endpoint = endpoint_for("http://h:1", source, key_env="CTXPANE_SCOPE_KEY")
    assert not endpoint.key_allowed and not endpoint.has_key and endpoint.key_withheld
    assert endpoint.auth_headers() == {} and endpoint.secrets == [] and KEY not in repr(endpoint)
    assert KEY not in repr(Endpoint("http://h:1", "m", "X", KEY, source))


def test_no_key_in_the_environment_is_not_withheld(monkeypatch):
    monkeypatch.delenv("CTXPANE_SCOPE_KEY", raising=False)
    endpoint = endpoint_for("http://h:1", "session", key_env="CTXPANE_SCOPE_KEY")
    assert not endpoint.has_key and not endpoint.key_withheld
    assert key_source("$OPENAI_BASE_URL") == "env" and key_source("found x") == "unknown"


@pytest.mark.parametrize("target,same", [
    ("https://api.example.com/v1/models", True), ("https://API.example.com:443/x", True),
    ("http://api.example.com/v1/models", False),  # same host text, no TLS: the old netloc test let it pass
    ("http://api.example.com:443/v1", False), ("https://api.example.com:8443/v1", False),
    ("https://api.example.com.evil.net/v1", False), ("https://evil.net/?api.example.com", False),
])
def test_the_key_goes_to_the_same_origin_only(target, same):
    endpoint = Endpoint("https://api.example.com", "m", "X", KEY, "flag")
    assert endpoint.may_carry_key(target) is same
    assert (origin_of(target) == endpoint.origin) is same


# -- probes and redirects, on real sockets -------------------------------------------------------------
async def test_a_session_address_is_probed_without_the_key(server, key_in_env):
    endpoint = endpoint_for(server.url + "/llama", "session", key_env="CTXPANE_SCOPE_KEY")
    connection = await connect(endpoint)
    await connection.client.aclose()
    tokenizer = ServerTokenizer(endpoint)
    try:
        tokenizer.encode_whole("hi")
    finally:
        tokenizer.close()
    paths = {r["path"].split("/", 2)[-1] for r in server.requests}
    assert {"v1/models", "props", "tokenize"} <= paths and connection.info.kind == "llama.cpp"
    assert authorised(server.requests) == []


async def test_a_chosen_address_is_probed_with_the_key(server, key_in_env):
    endpoint = endpoint_for(server.url + "/llama", "flag", key_env="CTXPANE_SCOPE_KEY")
    connection = await connect(endpoint)
    await connection.client.aclose()
    tokenizer = ServerTokenizer(endpoint)
    try:
        tokenizer.encode_whole("hi")
    finally:
        tokenizer.close()
    assert len(authorised(server.requests)) == len(server.requests) >= 3
    assert all(r["headers"]["Authorization"] == f"Bearer {KEY}" for r in server.requests)


async def test_probes_redirected_to_another_port_lose_the_key(server):
    with FaultServer() as other:  # same host, another port: another origin
        server.httpd.redirect_to = other.url
        async with OpenAIClient(Endpoint(server.url + "/redirectprobe", "fault-model", "X", KEY, "flag")) as client:
            info = await probe(client)
        assert info.kind == "llama.cpp" and info.n_ctx == 4096  # the answers came from the other port
        assert len(authorised(server.requests)) == len(server.requests) >= 2
        assert other.requests and authorised(other.requests) == []


async def test_a_chat_redirected_to_another_port_is_not_followed(server):
    """Issue 26: the body (the conversation) followed a 307 to another address; the key did not."""
    with FaultServer() as other:
        server.httpd.redirect_to = other.url
        async with OpenAIClient(Endpoint(server.url + "/redirect", "fault-model", "X", KEY, "flag")) as client:
            with pytest.raises(ClientError, match="redirected the request .* not followed"):
                await client.chat(BODY)
        assert authorised(server.requests) and other.requests == []


def test_the_server_tokenizer_does_not_follow_redirects(server):
    with FaultServer() as other:
        server.httpd.redirect_to = other.url
        tokenizer = ServerTokenizer(Endpoint(server.url + "/redirectprobe", "m", "X", KEY, "flag"))
        try:
            with pytest.raises(ClientError, match="does not follow"):
                tokenizer.encode_whole("hi")
        finally:
            tokenizer.close()
        assert other.requests == []


async def test_a_withheld_key_is_explained_on_401(server, key_in_env):
    endpoint = endpoint_for(server.url + "/auth", "session", key_env="CTXPANE_SCOPE_KEY")
    async with OpenAIClient(endpoint) as client:
        with pytest.raises(AuthFailed) as info:
            await client.chat(BODY)
    assert "was not sent" in str(info.value) and "session" in str(info.value) and KEY not in str(info.value)
    assert authorised(server.requests) == []


# -- the key never in a message, a repr or a log ---------------------------------------------------------
@pytest.mark.parametrize("scenario,error,stream", [
    ("authecho", AuthFailed, True), ("echokey", StreamErrorEvent, True), ("echokeychunk", StreamErrorEvent, True),
    ("echojunk", MalformedAnswer, False),
])
async def test_a_key_echoed_by_the_server_is_scrubbed(server, caplog, scenario, error, stream):
    caplog.set_level(logging.DEBUG)
    async with OpenAIClient(Endpoint(server.url + f"/{scenario}", "fault-model", "X", KEY, "flag"),
                            Limits(connect=2.0, read=5.0)) as client:
        with pytest.raises(error) as info:
            await client.chat({**BODY, "stream": stream})
    assert server.requests[-1]["headers"]["Authorization"] == f"Bearer {KEY}"  # it was sent, and echoed
    shown = " ".join([str(info.value), repr(info.value), *map(str, info.value.args),
                      str(getattr(info.value, "body", "")), caplog.text])
    assert "***" in str(info.value)
    assert KEY[:8] not in shown, shown  # neither the whole key nor its quoted first part


def test_redact_masks_whole_and_partial_keys():
    endpoint = Endpoint("http://h:1", "m", "X", KEY, "flag")
    assert endpoint.redact(f"a {KEY} b") == "a *** b"
    assert endpoint.redact(f"cut {KEY[:14]}") == "cut ***"
    assert endpoint.redact(f"x{KEY[:10]}-tail") == "x***-tail"
    assert endpoint.redact("sk-test") == "sk-test"  # a run shorter than 8 says nothing: left as it is
    assert Endpoint("http://h:1").redact("anything") == "anything"
    for dummy in ("x", "anything", "sk-1234", "not-a-real-key"):  # placeholder keys for local servers
        placeholder = Endpoint("http://h:1", "m", "X", dummy, "flag")
        text = f"max tokens exceeded; {dummy} is not {dummy}s"
        assert placeholder.redact(text) == text and not placeholder.key_searchable
        assert placeholder.secrets == [dummy]  # still never written where a key is carried
    assert endpoint.secrets == [KEY]
