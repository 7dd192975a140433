"""Sent against received against loopback servers that cut like Ollama (front), LM Studio (middle) and a
trimming proxy: the detector's verdict is checked against the text each server says it really kept."""

from __future__ import annotations

import asyncio
import re

import pytest

from tui.client.endpoint import Endpoint
from tui.client.errors import ClientError, ContextOverflow
from tui.client.doctor.server import run_doctor
from tui.client.figures import receipt_after, reported_from_record
from tui.client.http import Limits, OpenAIClient
from tui.client.server_info import probe
from tui.context.policy.truncation import PolicySettings
from tui.context.messages import Message, Provenance
from tui.context.fit.received import DROPPED, MATCH, REFUSED, observed
from tui.context.request import RequestSettings, build_request
from tui.context.templates.library import builtin_template
from tui.context.tokens.counting import get_tokenizer
from tui.context.fit.window import choose_window, fit_check
from window_servers import OLLAMA_KEEP, WindowServer, ollama_kept_after_keep

SECRET = "The password is PERIWINKLE."


def conversation() -> list[Message]:
    """About 420 tokens: a system prompt holding a secret, then four turns of numbered words."""
    def turn(role: str, mid: str, word: str, count: int) -> Message:
        text = " ".join(f"{word}{i}" for i in range(count))
        return Message(role, text, provenance=Provenance("user" if role == "user" else "model", True), id=mid)

    return [Message("system", f"You are terse. {SECRET}", provenance=Provenance("system_prompt", True), id="sys"),
            turn("user", "u1", "apple", 30), turn("assistant", "a1", "berry", 30),
            turn("user", "u2", "cherry", 30), turn("assistant", "a2", "damson", 30), Message(
                "user", "Which fruit came first?", provenance=Provenance("user", True), id="u3")]


def settings() -> RequestSettings:
    return RequestSettings(builtin_template("chatml"), get_tokenizer("qwen3"), policy=PolicySettings())


async def exchange(url: str, stream: bool = False):
    async with OpenAIClient(Endpoint(url, "loop-model"), Limits(connect=2, read=20)) as client:
        info = await probe(client)
        view = build_request(conversation(), settings())
        fit = fit_check(view.sent_tokens, 0, info.window, info.kind)
        body = {"model": "loop-model", "messages": view.snapshot.wire, "stream": stream}
        try:
            outcome = await client.chat(body)
        except ClientError as exc:
            outcome = exc
    return info, view, fit, outcome, receipt_after(view, outcome, info)


def run(coroutine):
    return asyncio.run(coroutine)


def survived(message: Message, kept_text: str) -> str:
    """'whole', 'part' or 'none': how much of a message's words are in the text the server kept."""
    words = str(message.content).split()
    present = sum(1 for word in words if re.search(re.escape(word) + r"(?![0-9])", kept_text))
    return "whole" if present == len(words) else ("none" if present == 0 else "part")


def check_against_kept_text(receipt, kept_text: str) -> None:
    """Every message the receipt calls wholly lost is absent from what the server kept; partly lost is partly
    there; untouched is all there."""
    lost = {a.message_id: a for a in receipt.affected}
    for message in conversation():
        seen = survived(message, kept_text)
        if message.id not in lost or lost[message.id].text_intact:
            assert seen == "whole", (message.id, seen)
        elif lost[message.id].text_lost == lost[message.id].text_tokens:
            assert seen == "none", (message.id, seen)
        else:
            assert seen == "part", (message.id, seen)


@pytest.mark.parametrize("stream", [False, True])
def test_ollama_front_cut_is_found_with_the_system_prompt_named(stream):
    with WindowServer("ollama", n_ctx=256, ps=True) as server:
        info, view, fit, reply, receipt = run(exchange(server.url, stream))
    assert info.kind == "ollama" and info.window.tokens == 256 and info.window.source == "server"
    assert not fit.fits and "front" in fit.consequence  # warned before sending
    assert view.snapshot.counts.exact and view.sent_tokens > 256
    kept = OLLAMA_KEEP + ollama_kept_after_keep(256)  # 130: Ollama keeps half its window of an overflow
    assert receipt.verdict == DROPPED and receipt.received == kept
    assert receipt.sent - receipt.received == view.sent_tokens - kept
    assert receipt.where == "front" and receipt.who == "Ollama's num_ctx" and receipt.observed_window == 254
    assert "num_ctx 254-256" in receipt.who_detail  # the window it ran with (254-256), not the 130 it kept
    assert "sys" in [a.message_id for a in receipt.affected] and SECRET.split()[-1] not in reply.content
    check_against_kept_text(receipt, reply.content)


def test_ollama_without_api_ps_plans_with_model_metadata_and_learns_num_ctx():
    # only /api/show's 40960 is known (what the model supports): the request seems to fit, and is cut anyway
    with WindowServer("ollama", n_ctx=300, usage=False) as server:
        info, view, fit, reply, receipt = run(exchange(server.url))
    assert info.window.tokens == 40960 and info.window.source == "model" and fit.fits
    assert receipt.source == "prompt_eval_count" and receipt.received == OLLAMA_KEEP + ollama_kept_after_keep(300)  # no usage
    assert receipt.verdict == DROPPED and receipt.observed_window == 298  # 298-300: planned with the least
    check_against_kept_text(receipt, reply.content)


def test_lmstudio_middle_cut_keeps_the_start_and_the_end():
    with WindowServer("lmstudio", n_ctx=200) as server:
        info, view, fit, reply, receipt = run(exchange(server.url))
    assert info.kind == "lmstudio" and info.window.tokens == 200 and "loaded_context_length" in info.window.detail
    assert not fit.fits and "middle" in fit.consequence
    assert receipt.verdict == DROPPED and receipt.where == "middle" and receipt.received == 200
    names = [a.message_id for a in receipt.affected]
    assert "sys" not in names and "u1" not in names and "a1" in names  # the start was kept
    assert SECRET in reply.content
    check_against_kept_text(receipt, reply.content)


def test_a_trimming_proxy_is_told_apart_from_the_window():
    # a 4096-token window behind a proxy that forwards only the newest two turns: the window held everything
    with WindowServer("trimproxy", n_ctx=4096) as server:
        info, view, fit, reply, receipt = run(exchange(server.url))
    assert info.kind == "vllm" and fit.fits
    assert receipt.verdict == DROPPED and receipt.who == "a proxy or gateway" and receipt.observed_window is None


def test_a_request_within_the_window_matches_exactly():
    with WindowServer("ollama", n_ctx=4096, ps=True) as server:
        _info, view, fit, _reply, receipt = run(exchange(server.url))
    assert fit.fits and receipt.verdict == MATCH and receipt.received == view.sent_tokens


def test_a_stored_reply_gives_the_same_figures():
    with WindowServer("ollama", n_ctx=256, ps=True) as server:
        _info, _view, _fit, reply, _receipt = run(exchange(server.url))
    again = reported_from_record(reply.to_record())
    assert again.prompt_tokens == again.prompt_eval_count == OLLAMA_KEEP + ollama_kept_after_keep(256)
    assert reported_from_record({"usage": {"prompt_tokens": "many"}, "prompt_eval_count": -1}).received() == (
        None, "")  # wrong shapes are unknown, never an error


async def doctor(url: str, window_check: str = "auto"):
    async with OpenAIClient(Endpoint(url, "loop-model"), Limits(connect=2, read=20)) as client:
        return await run_doctor(client, window_check)


def test_doctor_finds_the_silent_front_cut_of_an_ollama_like_server():
    with WindowServer("ollama", n_ctx=256, ps=True) as server:
        report = run(doctor(server.url))
    check = {c.name: c for c in report.checks}["context window"]
    assert check.status == "warn" and check.data["prompt"]["outcome"] == "truncates"
    kept = OLLAMA_KEEP + ollama_kept_after_keep(256)
    assert check.data["prompt"]["received_prompt_tokens"] == kept
    assert check.data["prompt"]["dropped"] == check.data["prompt"]["sent_prompt_tokens"] - kept > 0
    assert "CUTS IT SILENTLY" in check.detail and report.exit_code == 1


def test_doctor_skips_a_window_it_cannot_probe_cheaply():
    with WindowServer("ollama", n_ctx=256) as server:  # only /api/show's 40960: over the automatic limit
        report = run(doctor(server.url))
    check = {c.name: c for c in report.checks}["context window"]
    assert check.status == "skip" and "40960" in check.detail and "--window-check on" in check.detail


def test_doctor_window_check_can_be_turned_off():
    with WindowServer("ollama", n_ctx=256, ps=True) as server:
        report = run(doctor(server.url, "off"))
    check = {c.name: c for c in report.checks}["context window"]
    assert check.status == "skip" and not check.data and not server.httpd.bodies[-1]["messages"][-1][
        "content"].startswith("Text:")  # no probe was sent


def test_a_vllm_refusal_is_read_from_its_wording():
    with WindowServer("vllm", n_ctx=300) as server:
        info, view, fit, error, receipt = run(exchange(server.url))
    assert info.kind == "vllm" and info.window.tokens == 300 and not fit.fits and "refuse" in fit.consequence
    assert isinstance(error, ContextOverflow) and error.n_ctx == 300 and error.n_prompt_tokens == view.sent_tokens
    assert receipt.verdict == REFUSED and receipt.received == view.sent_tokens
    window = observed(receipt, 1)
    assert window.tokens == 300 and window.source == "observed" and "refusal" in window.detail


def test_the_window_a_cut_reveals_is_planned_with_next():
    with WindowServer("ollama", n_ctx=300, usage=False) as server:
        info, _view, _fit, _reply, receipt = run(exchange(server.url))
    learned = observed(receipt, 1)
    assert learned.tokens == 298 and choose_window([*info.windows, learned]) == learned  # over /api/show's 40960


def test_doctor_on_a_vllm_like_server_finds_refusals():
    with WindowServer("vllm", n_ctx=300) as server:
        report = run(doctor(server.url))
    check = {c.name: c for c in report.checks}["context window"]
    prompt, reply = check.data["prompt"], check.data["reply"]
    assert check.status == "ok" and prompt["outcome"] == "errors" and reply["outcome"] == "refuses"
    assert prompt["server_window"] == 300 and prompt["server_prompt_tokens"] == prompt["sent_prompt_tokens"]


def test_an_ollama_before_0_30_11_keeps_its_whole_window_and_is_read_so():
    with WindowServer("ollama", n_ctx=256, ps=True, version="0.5.7") as server:
        _info, _view, _fit, _reply, receipt = run(exchange(server.url))
    assert receipt.received == 256 and receipt.observed_window == 256 and "0.5.7" in receipt.who_detail
