"""Redaction on decoded values, where secrets are carried, never in anybody's words (issues 25 and 26).

Before: the session file's JSON text was searched and replaced. A client of the tap sending the header
`x-api-key: "role": "user"` turned every later recording into invalid JSON; a key holding a backslash or a
quote stood escaped in the JSON and was written in clear; with `OPENAI_API_KEY=anything` every "anything" the
user or the model wrote became `***`.
"""

from __future__ import annotations

import json

import httpx
import pytest
from hypothesis import given, settings, strategies as st

from app_helpers import isolated, make_app, settle
from tap_helpers import RunningTap, upstream  # noqa: F401 - upstream is a fixture
from tui.context.messages import Message
from tui.context.untrusted.redaction import Redactor, credential_name, redact_url, searchable
from tui.sessions.model import RequestRecord, Session
from tui.sessions.redacted import redacted_session
from tui.sessions.store import load_session, save_session, session_text
from window_servers import WindowServer
from session_files import session_data

# Credential headers and parameters that the SDKs and gateways of this field send (OpenAI, Azure, Anthropic,
# Gemini, Bedrock's SigV4, LiteLLM, Portkey, Helicone, Cloudflare AI Gateway, Azure API Management).
CREDENTIAL_NAMES = ["Authorization", "Proxy-Authorization", "api-key", "x-api-key", "X-Goog-Api-Key",
                    "x-litellm-api-key", "anthropic-api-key", "x-portkey-api-key", "Helicone-Auth",
                    "cf-aig-authorization", "Ocp-Apim-Subscription-Key", "X-Amz-Security-Token",
                    "X-Amz-Signature", "X-Amz-Credential", "Cookie", "key", "api_key", "apikey", "auth_token",
                    "access-token", "access_token", "session_token", "client_secret", "password", "sig",
                    "signature", "token", "refresh_token", "id_token", "x-auth-token", "private_key"]
NOT_CREDENTIALS = ["Content-Type", "User-Agent", "X-Stainless-Lang", "anthropic-version", "OpenAI-Beta", "model",
                   "max_tokens", "max_completion_tokens", "prompt_tokens", "top_k", "tokenizer", "keyboard",
                   "monkey", "author", "prompt_cache_key", "session_id", "api-version", "budget_tokens", "x-request-id"]
# Keys made of JSON syntax, escapes and metacharacters; short ones and long (secret-shaped) ones.
HOSTILE_KEYS = ['"role": "user"', '"', "\\", '\\"', "{", "}", "[", "]", ",", ":", "null", "true", '","', "\n",
                '{"role": "user", "content": "x"}', 'sk-"quoted"\\back\\slash-0123456789',
                'sk-live-\\u0041\\n"}]},{"role":"system"-0123456789ABCDEF', "sk-</script>&<b>'-0123456789abcdef",
                "sk-\u202eunicode-ключ-0123456789ABCDEF", "sk-\x00\x1b\x7f-control-0123456789ab"]


def session_with(words: str, server_text: str) -> Session:
    session = Session(title=words[:100], messages=[Message("user", words, id="m0"), Message("assistant", words,
                                                                                            id="m1")])
    session.requests.append(RequestRecord(1, "t", {"model": "m", "messages": [{"role": "user", "content": words}]},
                                          reply={"content": words, "error": server_text,
                                                 "stream": {"raw": server_text, "error": server_text}}))
    return session


def test_credential_names_are_a_rule_on_words():
    assert [name for name in CREDENTIAL_NAMES if not credential_name(name)] == []
    assert [name for name in NOT_CREDENTIALS if credential_name(name)] == []


def test_a_placeholder_key_is_not_searched_for_and_a_real_looking_one_is():
    for placeholder in ("x", "none", "anything", "sk-1234", "not-a-real-key", "password", "EMPTY", "ollama",
                        "lm-studio", "dummy dummy dummy dummy"):
        assert not searchable(placeholder), placeholder
    for key in ("sk-proj-Ab3dEf6hIj9kLm2nOp5q", "sk-ant-api03-xyz0123456789", "AIzaSyD-0123456789abcdef",
                "0123456789abcdef0123456789abcdef", "sk-test-SCOPE-0123456789abcdefXYZ"):
        assert searchable(key), key


def test_a_word_key_never_rewrites_the_words_of_a_session(tmp_path):
    words = "anything you like: Anything, anything-goes, 'anything'"
    path = tmp_path / "s.ctxpane.json"
    save_session(session_with(words, "server said anything"), path, secrets=["anything"])
    loaded = load_session(path).session
    assert [m.content for m in loaded.messages] == [words, words]
    assert loaded.requests[0].body["messages"][0]["content"] == words and loaded.requests[0].reply["content"] == words
    assert loaded.title == words[:100]


@pytest.mark.parametrize("key", HOSTILE_KEYS)
def test_a_key_made_of_json_syntax_or_escapes_cannot_break_the_file_or_leak(tmp_path, key):
    words = f"my words {key} stay"
    path = tmp_path / "s.ctxpane.json"
    save_session(session_with(words, f"upstream echoed {key} back"), path, secrets=[key])
    loaded = load_session(path).session  # the file is valid JSON and a valid session
    assert [m.content for m in loaded.messages] == [words, words]
    record = loaded.requests[0]
    assert record.body["messages"][0]["content"] == words and record.reply["content"] == words
    if searchable(key):
        for text in (record.reply["error"], record.reply["stream"]["raw"], record.reply["stream"]["error"]):
            assert key not in text and text == "upstream echoed *** back"


@settings(max_examples=150, deadline=None)
@given(secrets=st.lists(st.text(min_size=1, max_size=40), max_size=4), words=st.text(max_size=80),
       server=st.text(max_size=80))
def test_any_secrets_leave_a_readable_file_with_every_word_kept(secrets, words, server):
    data = json.loads(session_text(session_with(words, server), secrets))
    assert [m["content"] for m in data["messages"]] == [words, words]
    assert data["requests"][0]["reply"]["content"] == words
    for secret in filter(searchable, secrets):
        assert secret not in json.dumps(data["requests"][0]["reply"]["stream"], ensure_ascii=False)


def test_credential_fields_and_url_credentials_are_masked_whatever_they_hold():
    session = session_with("hi", "")
    session.base_url = "https://user:pa55@gw.example/v1?api-version=1&key=k1;sig=s2#x"
    session.params = {"api_key": "k", "seed": 3}
    session.requests[0].body.update(api_key="k", metadata={"session_token": "t", "user": "u"}, max_tokens=9)
    data = redacted_session(session.to_dict(), [])
    assert data["endpoint"]["base_url"] == "https://user:***@gw.example/v1?api-version=1&key=***;sig=***#x"
    assert data["params"] == {"api_key": "***", "seed": 3}
    body = data["requests"][0]["body"]
    assert body["api_key"] == "***" and body["metadata"] == {"session_token": "***", "user": "u"}
    assert body["max_tokens"] == 9 and body["messages"] == [{"role": "user", "content": "hi"}]


def test_a_redactor_masks_a_cut_off_start_of_a_key_in_server_text_only():
    key = "sk-proj-Ab3dEf6hIj9kLm2nOp5q"
    redactor = Redactor([key])
    assert redactor.text(f"bad key {key[:14]}… given") == "bad key ***… given"
    assert redactor.text("sk-proj- keys look like this") == "sk-proj- keys look like this"


# -- through the tap ----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tap(upstream, tmp_path_factory):
    running = RunningTap(upstream.url, tmp_path_factory.mktemp("redaction-sessions"))
    yield running
    running.stop()


def chat(tap, scenario: str, content: str, headers=None, params=None, **body):
    answer = httpx.post(f"{tap.url}/{scenario}/v1/chat/completions", headers=headers or {}, params=params or {},
                        json={"model": "loop-model", "messages": [{"role": "user", "content": content}],
                              "stream": True, **body})
    assert answer.status_code == 200
    return answer


def recordings(tap) -> dict[str, dict]:
    """Every session file the tap wrote, each parsed (a file that is not JSON fails here)."""
    return {path.name: session_data(path) for path in tap.folder.iterdir() if path.suffix == ".json"}


def outside_words(data: dict) -> str:
    """A session file's text without the words of its messages (where a key typed by a client may stand)."""
    data = json.loads(json.dumps(data))
    data.pop("messages", None)
    data.pop("title", None)
    for request in data.get("requests", []):
        request["body"].pop("messages", None)
        request["reply"].pop("content", None)
    return json.dumps(data, ensure_ascii=False)


def test_a_client_cannot_corrupt_another_clients_recording_with_a_key_of_json_syntax(tap):
    before = set(recordings(tap))
    for n, key in enumerate(HOSTILE_KEYS):
        if "\n" in key or "\x00" in key or "\x1b" in key or "\x7f" in key or "\u202e" in key:
            continue  # not a value a header can carry
        chat(tap, "ok", f"hostile client {n}", headers={"x-api-key": key})
        chat(tap, "ok", f"honest client {n} says \"role\": \"user\" and {{ }} , : null")
    tap.settle()
    found = {name: data for name, data in recordings(tap).items() if name not in before}
    honest = [data for data in found.values() if data["messages"][0]["content"].startswith("honest client")]
    assert len(honest) == len([k for k in HOSTILE_KEYS if not set(k) & set("\n\x00\x1b\x7f\u202e")])
    for data in honest:
        number = data["messages"][0]["content"].split()[2]
        assert data["messages"][0]["content"] == f"honest client {number} says \"role\": \"user\" and {{ }} , : null"
        assert data["messages"][1]["content"] == "one two three"


@pytest.mark.parametrize("name,key", [
    ("Authorization", 'Bearer sk-"quoted"\\back\\slash-0123456789'),
    ("x-litellm-api-key", "sk-litellm-0123456789abcdefXYZ"),
    ("x-portkey-api-key", "pk-portkey-0123456789abcdefXYZ"),
    ("Helicone-Auth", "Bearer sk-helicone-0123456789abcdef"),
    ("X-Custom-Header", "sk-unlisted-header-0123456789abcdef"),  # by the value's shape
])
def test_a_key_echoed_by_the_upstream_in_any_credential_header_is_not_recorded(tap, name, key):
    before = set(recordings(tap))
    chat(tap, "echokey", f"echo {name}", headers={name: key})
    tap.settle()
    new = [data for file, data in recordings(tap).items() if file not in before]
    assert new, "the request was not recorded"
    secret = key.split(" ", 1)[-1]
    for data in new:
        text = json.dumps(data, ensure_ascii=False)
        assert secret not in text and json.dumps(secret)[1:-1] not in text, name
        assert "refused, you sent" in data["requests"][0]["reply"]["stream"]["raw"]


def test_query_keys_by_any_credential_name_or_after_a_semicolon_are_masked(tap):
    secrets = {"auth_token": "q-auth-0123456789abcdef", "access-token": "q-access-0123456789abcdef",
               "X-Amz-Security-Token": "q-amz-0123456789abcdef", "session_token": "q-session-0123456789abcdef",
               "x-goog-api-key": "q-goog-0123456789abcdef"}
    query = "&".join(f"{k}={v}" for k, v in secrets.items()) + ";key=q-semicolon-0123456789abcdef"
    answer = httpx.post(f"{tap.url}/echokey/v1/chat/completions?{query}",
                        json={"model": "loop-model", "messages": [{"role": "user", "content": "query keys"}],
                              "stream": True})
    assert answer.status_code == 200
    tap.settle()
    shown = [t.exchange.path for t in tap.recorder.tapped.values() if "auth_token" in t.exchange.path][-1]
    for value in [*secrets.values(), "q-semicolon-0123456789abcdef"]:
        assert value not in shown
        assert not any(value in json.dumps(data) for data in recordings(tap).values())


def test_nested_credential_fields_of_a_body_are_forwarded_but_not_kept(tap, upstream):
    token = "nested-session-token-0123456789"
    chat(tap, "ok", "nested", metadata={"session_token": token, "user": "u1"})
    assert token in upstream.seen[-1]["body"].decode()
    tap.settle()
    data = [d for d in recordings(tap).values() if d["messages"][0]["content"] == "nested"][-1]
    assert data["requests"][0]["body"]["metadata"] == {"session_token": "***", "user": "u1"}


def test_a_key_a_client_types_in_a_message_is_kept_as_written_but_nowhere_else(tap):
    key = "sk-typed-by-the-user-0123456789abcdef"
    chat(tap, "echokey", f"my key is {key}", headers={"Authorization": f"Bearer {key}"})
    tap.settle()
    data = [d for d in recordings(tap).values() if d["messages"][0]["content"] == f"my key is {key}"][-1]
    assert data["requests"][0]["body"]["messages"][0]["content"] == f"my key is {key}"  # what was sent
    assert key not in outside_words(data)


# -- the app, with a placeholder key ------------------------------------------------------------------------
async def test_a_session_chatted_with_a_word_as_key_keeps_every_word(tmp_path, monkeypatch):
    sessions = isolated(monkeypatch, tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "anything")
    words = "anything at all: is anything left of anything?"
    with WindowServer("vllm", n_ctx=4096) as server:
        app = make_app(tmp_path, flags={"base_url": server.url})
        notices = []
        shown = app.notify
        app.notify = lambda text, **kw: (notices.append(text), shown(text, **kw))  # notices expire: keep each
        async with app.run_test(size=(140, 40), notifications=True) as pilot:
            await settle(pilot, app)
            await pilot.press(*words, "enter")
            for _ in range(200):
                await settle(pilot, app)
                if not app.controller.streaming and app.controller.wb.session.requests:
                    break
            path = app.controller.file.session_file
            said = [text for text in notices if "placeholder" in text]
            app.controller.file.save()
            app.controller.close()
    data = session_data(path)
    assert data["messages"][0]["content"] == words
    assert "anything" in data["messages"][1]["content"]  # the loopback answers with the text it kept
    assert data["requests"][0]["body"]["messages"][-1]["content"] == words
    assert "***" not in json.dumps(data)
    assert sessions is not None
    assert len(said) == 1 and "OPENAI_API_KEY" in said[0]


# -- found by a fresh-eyes review ---------------------------------------------------------------------------
def test_camel_case_digits_and_brackets_are_read_as_words_and_tokenizer_tokens_are_not_keys():
    for name in ("accessToken", "authToken", "clientSecret", "sessionToken", "secretKey", "privateKey", "xApiKey",
                 "awsSecretAccessKey", "api_key[]", "api_key2", "jwt", "passphrase", "pwd", "APIKey"):
        assert credential_name(name), name
    for name in ("eos_token", "bos_token", "pad_token", "max_token", "auth_method", "signature_version", "keys",
                 "sort_key", "token_count"):
        assert not credential_name(name), name


def test_whatever_a_credential_field_holds_is_masked_and_key_shaped_values_too():
    body = {"model": "m", "messages": [{"role": "user", "content": "sk-proj-0123456789abcdef in my words"}],
            "api_key": ["k1"], "auth": {"bearer": "k2"}, "credentials": {"value": "k3"},
            "metadata": {"note": "sk-proj-0123456789abcdef", "accessToken": "k4", "n": 3}}
    out = Redactor().value(body, lambda path: len(path) == 1 and path[0] == "messages", by_name=True)
    assert out["api_key"] == out["auth"] == out["credentials"] == "***"
    assert out["metadata"] == {"note": "***", "accessToken": "***", "n": 3}
    assert out["messages"] == body["messages"]


def test_a_key_escaped_in_raw_json_is_masked_whole():
    key = "sk-é/TAILSECRET-abcdefghijkl"
    raw = "data: " + json.dumps({"error": {"message": f"you sent {key}"}}) + "\n" + \
        "data: " + json.dumps({"error": {"message": f"you sent {key}"}}).replace("/", "\\/") + "\n"
    masked = Redactor([key]).text(raw)
    assert "TAILSECRET" not in masked and masked.count("***") == 2


def test_urls_lose_a_token_standing_as_the_user_name():
    assert redact_url("https://TOKEN0123456789@gw.example/v1") == "https://***@gw.example/v1"
    assert redact_url("https://gw.example/v1?q=sk-abcdefghijklmnop") == "https://gw.example/v1?q=***"


def test_another_clients_key_can_never_make_a_recording_unreadable(tmp_path):
    session = session_with("hello", "server text")
    session.id = "tap-20261202-013038-1"
    path = tmp_path / "s.ctxpane.json"
    # a key that equals the start of the session's id, its hashes or its field names
    save_session(session, path, secrets=["tap-202612-zzzzzzzzzzzz", "tap-20261202-013038-1", "document_hash",
                                         session.requests[0].document_hash or "0" * 64])
    loaded = load_session(path).session
    assert loaded.id == session.id and loaded.messages[0].content == "hello"


def test_import_leaves_out_a_parameter_that_holds_a_credential(tmp_path):
    from tui.sessions.transfer import import_file
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "accessToken": "k",
            "metadata": {"session_token": "t"}, "temperature": 0.5}
    imported = import_file(tmp_path / "b.json", json.dumps(body).encode())
    assert imported.session.params == {"temperature": 0.5}
    assert any("accessToken" in item for item in imported.left_out)
    assert any("metadata" in item for item in imported.left_out)


def test_path_parameters_and_key_shaped_query_values_are_masked_in_the_tap_list():
    from tui.tap.server import shown_path
    shown, secrets = shown_path("/v1;api_key=PATHKEY/chat/completions?accessToken=AAAA&jwt=BBBB&q=sk-abcdefghijklmnop")
    assert shown == "/v1;api_key=***/chat/completions?accessToken=***&jwt=***&q=***"
    assert {"PATHKEY", "AAAA", "BBBB", "sk-abcdefghijklmnop"} <= set(secrets)


async def test_a_key_put_in_the_sessions_parameters_is_not_shown_or_copied(tmp_path, monkeypatch):
    from test_chat_markdown import markdown_session
    from tui.app.pane.request_tab import RequestView
    isolated(monkeypatch, tmp_path)
    path = markdown_session(tmp_path, "a reply")
    data = session_data(path)
    data["params"] = {"api_key": "sk-params-secret-0123456789", "temperature": 0.2}
    path.write_text(json.dumps(data))
    app = make_app(tmp_path, offline=True, file=path)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, app)
        app.query_one("#tabs").active = "request"
        await settle(pilot, app)
        assert "sk-params-secret" not in app.query_one(RequestView).text
        await app.run_action("copy_curl")
        assert "sk-params-secret" not in app.clipboard and '"temperature":0.2' in app.clipboard


def test_a_client_whose_user_agent_is_not_utf8_is_recorded(tap):
    before = set(recordings(tap))
    answer = httpx.post(f"{tap.url}/ok/v1/chat/completions", headers={"User-Agent": b"agent\xff\xfe/1.0"},
                        json={"model": "loop-model", "messages": [{"role": "user", "content": "odd agent"}],
                              "stream": True})
    assert answer.status_code == 200
    tap.settle()
    assert [d for f, d in recordings(tap).items() if f not in before and d["messages"][0]["content"] == "odd agent"]
