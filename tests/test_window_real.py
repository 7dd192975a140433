"""Sent against received on the real llama.cpp server with a 512-token window (LLAMA_CTX=512).

What this build does, found by hand first and asserted here: a prompt of 512 tokens or more is refused
with a 400 exceed_context_size_error naming its count and n_ctx; 511 is accepted; a reply that reaches
the window stops there (finish_reason "length", prompt + reply = 512); with --context-shift the reply
goes on past the window instead. The chat endpoint carries no `truncated` flag.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from tui.client.doctor.server import server_template
from tui.client.endpoint import Endpoint
from tui.client.errors import ClientError, ContextOverflow
from tui.client.figures import receipt_after
from tui.client.http import Limits, OpenAIClient
from tui.client.server_info import probe
from tui.client.doctor.window import check_window
from tui.context.policy.truncation import PolicySettings
from tui.context.messages import Message, Provenance
from tui.context.fit.received import MATCH, REFUSED
from tui.context.request import RequestSettings, build_request
from tui.context.tokens.counting import get_tokenizer
from tui.context.fit.window import fit_check

pytestmark = pytest.mark.server


def messages_of(words: int) -> list[Message]:
    return [Message("system", "You are terse.", provenance=Provenance("system_prompt", True), id="sys"),
            Message("user", " ".join(["a"] * words), provenance=Provenance("user", True), id="u1")]


def sized(settings: RequestSettings, target: int):
    """A request of exactly `target` prompt tokens (each added word " a" is one Qwen3 token)."""
    words = target
    for _ in range(5):
        view = build_request(messages_of(words), settings)
        if view.sent_tokens == target:
            return view
        words += target - view.sent_tokens
    raise AssertionError(f"no request of {target} tokens")


async def send(url: str, target: int, max_tokens: int = 1):
    async with OpenAIClient(Endpoint(url, "tiny-qwen3", "CTXPANE_NO_KEY"), Limits(read=60)) as client:
        info = await probe(client)
        template, _own = server_template(info)
        # exact: the doctor's token check shows this template and tokenizer give the server's counts
        settings = RequestSettings(template, get_tokenizer("qwen3"), policy=PolicySettings(), exact=True)
        view = sized(settings, target)
        fit = fit_check(view.sent_tokens, max_tokens, info.window, info.kind)
        body = {"messages": view.snapshot.wire, "max_tokens": max_tokens, "temperature": 0}
        try:
            outcome = await client.chat(body)
        except ClientError as exc:
            outcome = exc
        return info, view, fit, outcome, receipt_after(view, outcome, info, max_tokens)


def run(coroutine):
    return asyncio.run(coroutine)


def test_the_window_comes_from_props(llama_512):
    info = run(probe_only(llama_512))
    assert info.window.tokens == 512 and info.window.source == "server"
    assert info.window.detail == "/props default_generation_settings.n_ctx"


async def probe_only(url):
    async with OpenAIClient(Endpoint(url, "tiny-qwen3", "CTXPANE_NO_KEY")) as client:
        return await probe(client)


def test_over_the_window_the_server_refuses_and_counts_as_ctxpane_does(llama_512):
    info, view, fit, outcome, receipt = run(send(llama_512, 600))
    assert not fit.fits and fit.over_by == 600 - 511 and "refuse" in fit.consequence
    assert isinstance(outcome, ContextOverflow) and outcome.n_ctx == 512
    assert outcome.n_prompt_tokens == view.sent_tokens == 600  # the server's count is the engine's
    assert receipt.verdict == REFUSED and receipt.received == 600 and receipt.observed_window == 512


@pytest.mark.parametrize("target, accepted", [(511, True), (512, False)])
def test_the_boundary_is_one_token_short_of_the_window(llama_512, target, accepted):
    _info, _view, fit, outcome, receipt = run(send(llama_512, target))
    assert fit.over_by == (0 if accepted else 1)
    assert isinstance(outcome, ContextOverflow) != accepted
    assert receipt.verdict == (MATCH if accepted else REFUSED) and receipt.received == target


def test_a_reply_that_reaches_the_window_stops_there(llama_512):
    _info, _view, fit, reply, receipt = run(send(llama_512, 500, max_tokens=40))
    assert not fit.fits and fit.reply_room == 12  # 512 - 500 = 12 tokens for a reply of up to 40
    assert reply.finish_reason == "length" and reply.usage["completion_tokens"] == 12
    assert receipt.verdict == MATCH and receipt.reply_cut and not receipt.shifted
    assert "stopped after 12 tokens of the 40" in receipt.notes[0]


def test_with_context_shift_the_reply_goes_past_the_window(llama_512_shift):
    _info, _view, _fit, reply, receipt = run(send(llama_512_shift, 500, max_tokens=40))
    assert reply.usage["completion_tokens"] == 40 and reply.usage["prompt_tokens"] == 500
    assert receipt.verdict == MATCH and receipt.shifted and not receipt.reply_cut
    assert "~28" in receipt.notes[0]  # 500 + 40 - 512


@pytest.fixture()
def run_cli(cli_in_process):
    return cli_in_process


def window_check_of(run_cli, url: str, *flags: str) -> dict:
    result = run_cli("doctor", url, "--json", *flags)
    assert result.returncode in (0, 1), result.stderr
    return {c["name"]: c for c in json.loads(result.stdout)["checks"]}["context window"]


def test_doctor_finds_that_this_server_refuses_and_stops(llama_512, run_cli):
    check = window_check_of(run_cli, llama_512)
    prompt, reply = check["data"]["prompt"], check["data"]["reply"]
    assert check["status"] == "ok" and prompt["outcome"] == "errors" and reply["outcome"] == "stops"
    # just over: the server's own count of the probe is past 512 by about OVER (16) tokens
    assert 512 < prompt["server_prompt_tokens"] <= 512 + 20 and prompt["server_window"] == 512
    assert reply["prompt_tokens"] + reply["completion_tokens"] == 512
    assert "refuses it with an error" in check["detail"] and "/props" in check["detail"]


def test_doctor_finds_the_context_shift(llama_512_shift):
    status, detail, data = run(window_check_only(llama_512_shift))
    assert status == "warn" and data["reply"]["outcome"] == "shifts" and data["prompt"]["outcome"] == "errors"
    assert data["reply"]["prompt_tokens"] + data["reply"]["completion_tokens"] > 512 and "SHIFTS" in detail


async def window_check_only(url):
    async with OpenAIClient(Endpoint(url, "tiny-qwen3", "CTXPANE_NO_KEY"), Limits(read=60)) as client:
        return await check_window(client, await probe(client))
