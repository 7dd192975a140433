"""ctxpane through a real LiteLLM proxy in front of the real llama.cpp server (both from ../shared).

The gateway hides the server's /props, /tokenize and /apply-template, wants a key, and answers some
requests its own way (500 without a key, 400 "No connected db." for a wrong one). The key is only ever
in an environment variable; every test scans what it produced for it.
"""

from __future__ import annotations

import json

import pytest

from conftest import files_holding
from controller_helpers import Harness
from tui.client.connect import connect
from tui.client.endpoint import Endpoint
from tui.client.errors import AuthFailed
from tui.controller.events import StatusChanged
from tui.sessions.model import Session

pytestmark = [pytest.mark.server, pytest.mark.xdist_group("gateway"), pytest.mark.timeout(900)]
KEY_ENV = "CTXPANE_TEST_GWKEY"


@pytest.fixture()
def gateway(litellm_gateway, monkeypatch):
    monkeypatch.setenv(KEY_ENV, litellm_gateway.key)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    return litellm_gateway


async def test_connect_learns_the_upstream_model_and_labels_everything_an_estimate(gateway):
    endpoint = Endpoint.from_env(gateway.url, key_env=KEY_ENV)
    connection = await connect(endpoint)
    try:
        info = connection.info
        assert (info.kind, info.gateway, info.model) == ("litellm", "LiteLLM", "tiny-qwen3")
        assert info.upstream.model == "openai/tiny-qwen3"
        assert info.upstream.api_base == gateway.upstream  # reported, shown, never contacted with the key
        assert connection.template is None and connection.exact is False
        assert connection.assumed is not None and connection.assumed.name == "qwen3"
        assert connection.tokenizer == "qwen3"
        assert "estimate" in connection.note and "learned from the gateway's /v1/model/info" in connection.note
        # the assumed template writes no system turn the user did not write
        rendered = connection.assumed.render([{"role": "user", "content": "Hi"}], add_generation_prompt=True)
        assert "system" not in rendered and "Alibaba" not in rendered
        # a streamed reply through the gateway, with the usage the pane compares with
        reply = await connection.client.chat({"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4,
                                              "temperature": 0, "stream": True})
        assert reply.finish_reason in ("length", "stop") and not reply.incomplete
        assert reply.prompt_tokens == 9  # "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
        assert reply.cached_tokens is not None  # prompt_tokens_details.cached_tokens comes through
    finally:
        await connection.client.aclose()


@pytest.mark.parametrize("key", [None, "sk-wrong-0123456789abcdef"])
async def test_a_missing_or_wrong_key_is_one_line_naming_the_variable(gateway, monkeypatch, key):
    if key is None:
        monkeypatch.delenv(KEY_ENV)
    else:
        monkeypatch.setenv(KEY_ENV, key)
    endpoint = Endpoint.from_env(gateway.url, key_env=KEY_ENV)
    with pytest.raises(AuthFailed) as failed:
        await connect(endpoint)
    message = str(failed.value)
    assert f"${KEY_ENV}" in message and "\n" not in message
    assert ("no key was sent" in message) if key is None else ("was refused" in message and key not in message)
    assert "Internal Server Error" not in message


def test_doctor_reports_what_it_checks_and_what_the_gateway_hides(gateway, cli_in_process, tmp_path):
    result = cli_in_process("doctor", gateway.url, "--api-key-env", KEY_ENV, "--json")
    report = json.loads(result.stdout)
    checks = {check["name"]: check for check in report["checks"]}
    assert report["server"]["gateway"] == "LiteLLM" and report["server"]["upstream"] == "openai/tiny-qwen3"
    assert "forwards to openai/tiny-qwen3" in checks["server"]["detail"]
    for hidden in ("template", "rendering", "token count"):
        assert checks[hidden]["status"] == "skip" and "hides the server's" in checks[hidden]["detail"]
    assert "assumed: qwen3" in checks["template"]["detail"]
    assert checks["streaming"]["status"] == "ok", checks["streaming"]
    assert checks["streaming"]["data"]["usage"]["prompt_tokens"] > 0
    assert checks["end of replies"]["status"] == "ok" and checks["end of replies"]["data"]["leaked"] == []
    assert checks["prompt cache"]["status"] == "ok" and checks["prompt cache"]["data"]["second_cached_tokens"] > 0
    assert checks["gateway errors"]["status"] == "ok" and checks["gateway errors"]["data"]["status"] == 400
    assert "request" not in checks  # no request failed: the model found is the model asked for
    assert result.returncode == 0 and report["exit_code"] == 0
    assert "None" not in " ".join(check["detail"] for check in report["checks"])
    assert gateway.key not in result.stdout + result.stderr and not files_holding(tmp_path, gateway.key)


@pytest.mark.parametrize("key", [None, "sk-wrong-0123456789abcdef"])
def test_doctor_without_the_right_key_says_which_variable(gateway, cli_in_process, monkeypatch, key):
    if key is None:
        monkeypatch.delenv(KEY_ENV)
    else:
        monkeypatch.setenv(KEY_ENV, key)
    result = cli_in_process("doctor", gateway.url, "--api-key-env", KEY_ENV)
    assert result.returncode == 2 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and f"${KEY_ENV}" in lines[0], result.stderr
    assert ("wants a key" in lines[0]) if key is None else ("refused" in lines[0] and key not in lines[0])


async def test_the_controller_chats_through_the_gateway_with_honest_labels(gateway, tmp_path):
    made = Harness(tmp_path, base_url=gateway.url, api_key_env=KEY_ENV, tokenizer="")
    ctl = made.ctl
    try:
        await made.ready(Session(title="through a gateway"))
        ctl.connect()
        await made.idle()
        assert ctl.client is not None, [e.text for e in made.of(StatusChanged)]
        assert "litellm at" in ctl.link.status_line and "estimate" in ctl.link.status_line
        assert ctl.wb.template.name == "qwen3" and ctl.tuning.assumed().startswith("template assumed: qwen3")
        pane = ctl.pane_state()
        assert pane.assumed and pane.view.snapshot.counts.exact is False
        ctl.set_draft("Hello through the gateway")
        await made.idle()
        document = ctl.wb.view.snapshot.document.text
        assert "Alibaba" not in document and "<|im_start|>system" not in document
        for attempt in range(3):  # the tiny model sometimes answers nothing: the figures are checked each time
            assert ctl.sending.submit(f"Hello through the gateway ({attempt})")
            await made.until_replied()
            record = ctl.wb.session.requests[-1]
            assert record.usage["prompt_tokens"] == record.document_tokens, (record.usage, record.document_tokens)
            assert record.usage["prompt_tokens_details"]["cached_tokens"] >= 0
            assert record.tokens_exact is False
            if record.reply["content"].strip():
                break
        assert record.received["verdict"] == "match", record.received  # sent = received, from the gateway's usage
    finally:
        ctl.close()
    await made.idle()
    assert not files_holding(tmp_path, gateway.key)


@pytest.mark.parametrize("key", [None, "sk-wrong-0123456789abcdef"])
async def test_the_controller_without_the_right_key_says_what_to_set_once_and_claims_nothing_exact(
        gateway, tmp_path, monkeypatch, key):
    if key is None:
        monkeypatch.delenv(KEY_ENV)
    else:
        monkeypatch.setenv(KEY_ENV, key)
    made = Harness(tmp_path, base_url=gateway.url, api_key_env=KEY_ENV, tokenizer="")
    ctl = made.ctl
    try:
        await made.ready(Session(title="no key"))
        ctl.connect()
        await made.idle()
        assert ctl.client is None
        last = [e.text for e in made.of(StatusChanged)][-1]
        assert f"${KEY_ENV}" in last and "trying again" not in last, last
        assert ("wants a key" in last) if key is None else ("was refused" in last and key not in last), last
        ctl.set_draft("Hello")
        await made.idle()
        assert ctl.wb.view.snapshot.counts.exact is False
        assert "Alibaba" not in ctl.wb.view.snapshot.document.text  # no default system turn shown as sent
    finally:
        ctl.close()


async def test_a_tokenizer_of_the_right_family_chosen_by_the_user_is_still_no_exact_count(gateway, tmp_path):
    """--tokenizer qwen3 with the assumed qwen3 template: same family, but the gateway hides the server's
    template, so the pane's document is a guess: an estimate."""
    made = Harness(tmp_path, base_url=gateway.url, api_key_env=KEY_ENV, tokenizer="qwen3")
    ctl = made.ctl
    try:
        await made.ready(Session(title="picked tokenizer"))
        ctl.connect()
        await made.idle()
        assert ctl.client is not None and ctl.wb.template.name == "qwen3"
        ctl.set_draft("Hello")
        await made.idle()
        assert ctl.wb.view.snapshot.counts.exact is False
        ctl.tokenizing.load("qwen3")  # picked again in the app
        await made.idle()
        assert ctl.wb.view.snapshot.counts.exact is False
        ctl.set_template("llama3")  # another template picked (F3): still not the server's
        await made.idle()
        assert ctl.pane_state().assumed == "template assumed: llama3, as chosen (the gateway hides the server's)"
        assert ctl.wb.view.snapshot.counts.exact is False
    finally:
        ctl.close()
