"""Sent against received, in the engine: worked examples of each verdict, checked by hand in the comments."""

from __future__ import annotations

import pytest

from tui.context.policy.truncation import PolicySettings
from tui.context.messages import Message, Provenance
from tui.context.fit.received import (ADDED, DROPPED, MATCH, REFUSED, UNKNOWN, Reported,
                                  affected_messages, compare, dropped_range, message_ranges, shape_ranges)
from tui.context.request import RequestSettings, build_request
from tui.context.templates.library import builtin_template
from tui.context.tokens.counting import get_tokenizer
from tui.context.fit.window import WindowSize, choose_window, fit_check

# A request of 100 tokens: 2 of overhead (say BOS), then four messages, then a 3-token generation prompt.
#   sys  [2, 22)   u1 [22, 52)   a1 [52, 67)   u2 [67, 97)   overhead [97, 100)
SPANS = [("", "marker", 0, 1, 2), ("sys", "marker", 1, 2, 3), ("sys", "content", 2, 3, 17),
         ("u1", "content", 3, 4, 30), ("a1", "content", 4, 5, 15), ("u2", "marker", 5, 6, 3),
         ("u2", "content", 6, 7, 27), ("", "marker", 7, 8, 3)]
ROLES = {"sys": "system", "u1": "user", "a1": "assistant", "u2": "user"}
RANGES = message_ranges(SPANS, ROLES)


def test_message_ranges_add_up_spans_and_skip_text_of_no_message():
    assert [(r.message_id, r.role, r.start, r.end) for r in RANGES] == [
        ("sys", "system", 2, 22), ("u1", "user", 22, 52), ("a1", "assistant", 52, 67), ("u2", "user", 67, 97)]


def test_affected_messages_names_whole_and_partial_losses():
    # tokens [10, 60): sys loses 22 - 10 = 12 of 20 (its text [5, 22) loses 12 of 17), u1 all 30, a1 8 of 15
    hit = affected_messages(RANGES, 10, 60)
    assert [(a.message_id, a.lost, a.tokens, a.whole, a.text_lost, a.text_tokens) for a in hit] == [
        ("sys", 12, 20, False, 12, 17), ("u1", 30, 30, True, 30, 30), ("a1", 8, 15, False, 8, 15)]
    # tokens [64, 70): a1's text loses 3, and u2 loses 3 marker tokens [67, 70) with its text intact
    tail = affected_messages(RANGES, 64, 70)
    assert [(a.message_id, a.lost, a.text_lost, a.text_intact) for a in tail] == [("a1", 3, 3, False),
                                                                                ("u2", 3, 0, True)]


def test_an_exact_count_that_matches():
    receipt = compare(100, True, Reported(prompt_tokens=100), RANGES, "llama.cpp")
    assert receipt.verdict == MATCH and receipt.difference == 0 and receipt.source == "usage.prompt_tokens"


def test_llamacpp_timings_count_when_usage_is_absent():
    # prompt_n 38 evaluated + cache_n 62 reused = 100 processed
    receipt = compare(100, True, Reported(prompt_n=38, cache_n=62), RANGES, "llama.cpp")
    assert receipt.verdict == MATCH and receipt.source == "timings.prompt_n + cache_n"


def test_ollama_cut_the_front_after_its_four_kept_tokens():
    # sent 100, Ollama kept 60 (its num_ctx, or half of it): 40 lost from token 4 on (num_keep 4), i.e. [4, 44):
    # sys [2, 22) loses 18 of 20, u1 [22, 52) loses 44 - 22 = 22 of 30
    receipt = compare(100, True, Reported(prompt_tokens=60, prompt_eval_count=60), RANGES, "ollama")
    assert receipt.verdict == DROPPED and receipt.where == "front"
    assert [(a.message_id, a.lost) for a in receipt.affected] == [("sys", 18), ("u1", 22)]
    # its version unknown: num_ctx 60-61 (whole window kept) or 114-116 (half kept); planned with the 60 kept
    assert receipt.who == "Ollama's num_ctx" and receipt.observed_window == 60
    assert "60-61" in receipt.who_detail and "114-116" in receipt.who_detail and "not known" in receipt.who_detail
    assert "~40" in receipt.summary and "sys" in receipt.summary


def test_lmstudio_cut_the_middle_after_the_first_user_message():
    # sent 100, kept 70: 30 lost after u1 (which ends at 52): [52, 82) = all of a1 (15) and 15 of u2
    receipt = compare(100, True, Reported(prompt_tokens=70), RANGES, "lmstudio",
                      WindowSize(70, "server", "loaded_context_length"))
    assert receipt.where == "middle"
    assert [(a.message_id, a.lost, a.whole) for a in receipt.affected] == [("a1", 15, True), ("u2", 15, False)]
    assert receipt.who == "the server's context size"


def test_a_cache_reuse_of_the_start_moves_the_cut_off_the_front():
    # an unknown server kept 80 and reused 30 tokens from its cache: the start (sys ends at 22) survived
    receipt = compare(100, True, Reported(prompt_tokens=80, cached_tokens=30), RANGES, "openai-compatible")
    assert receipt.where == "middle" and "reused 30" in receipt.where_basis


def test_a_cut_when_the_window_would_have_held_everything_is_a_proxy():
    receipt = compare(100, True, Reported(prompt_tokens=50), RANGES, "vllm", WindowSize(4096, "server", "x"))
    assert receipt.verdict == DROPPED and receipt.who == "a proxy or gateway" and receipt.observed_window is None


def test_the_end_range_is_the_last_tokens():
    assert dropped_range("end", 10, 100, RANGES) == (90, 100)
    assert dropped_range("front", 10, 100, RANGES, keep_head=4) == (4, 14)
    assert dropped_range("middle", 60, 100, RANGES) == (40, 100)  # pushed back so that it fits


def test_more_received_than_sent_is_added_text():
    receipt = compare(100, True, Reported(prompt_tokens=112), RANGES, "llama.cpp")
    assert receipt.verdict == ADDED and receipt.difference == 12 and not receipt.affected


def test_an_estimate_within_its_margin_is_no_finding_but_past_it_is():
    # an estimate may be 10% off: 100 sent, 93 received is within
    assert compare(100, False, Reported(prompt_tokens=93), RANGES).verdict == MATCH
    # 360 of 400: 40 off, the margin is round(400 x 0.10) = 40, so still within
    assert compare(400, False, Reported(prompt_tokens=360), RANGES).verdict == MATCH
    # 85 of 100 or 340 of 400 (15%) is past the margin but within the doubt (max(32, 25%)): another
    # tokenizer or the server's own template could do that, so it is neither a cut nor added text
    for sent, received in ((100, 85), (400, 340), (400, 460), (40, 70)):
        receipt = compare(sent, False, Reported(prompt_tokens=received), RANGES)
        assert receipt.verdict == UNKNOWN and "cannot tell that from a cut" in receipt.summary, (sent, received)
        assert receipt.difference == received - sent
    # 280 of 400 (30%, 120 tokens) is past the doubt: a cut
    assert compare(400, False, Reported(prompt_tokens=280), RANGES).verdict == DROPPED
    # within the doubt, but the server stopped at its window (86 of a 90-token window: within 8) or flags it
    window = WindowSize(90, "server")
    assert compare(100, False, Reported(prompt_tokens=86), RANGES, window=window).verdict == DROPPED
    assert compare(100, False, Reported(prompt_tokens=85, truncated=True), RANGES).verdict == DROPPED
    # an exact count has no doubt: one token fewer is a cut
    assert compare(100, True, Reported(prompt_tokens=99), RANGES).verdict == DROPPED


def test_a_refusal_carries_the_servers_count_and_window():
    receipt = compare(627, True, Reported(refused=True, error_prompt_tokens=627, error_window=512), RANGES)
    assert receipt.verdict == REFUSED and receipt.received == 627 and receipt.observed_window == 512
    assert "nothing was cut" in receipt.summary


def test_no_figure_is_unknown():
    assert compare(100, True, Reported(), RANGES).verdict == UNKNOWN


def test_a_reply_stopped_by_a_full_window_and_one_that_went_past_it():
    window = WindowSize(512, "server", "/props")
    # 510 prompt + 2 reply = 512 = the window, though 4 were asked for: cut
    cut = compare(510, True, Reported(prompt_tokens=510, completion_tokens=2, finish_reason="length"), RANGES,
                  "llama.cpp", window, max_tokens=4)
    assert cut.verdict == MATCH and cut.reply_cut and not cut.shifted
    # 508 + 40 = 548 > 512: the server shifted its context by ~36 tokens
    shifted = compare(508, True, Reported(prompt_tokens=508, completion_tokens=40, finish_reason="length"), RANGES,
                      "llama.cpp", window, max_tokens=40)
    assert shifted.shifted and "~36" in shifted.notes[0]


def test_window_sources_rank_server_over_config_over_model():
    found = [WindowSize(131072, "model", "/api/show"), WindowSize(8192, "config", "policy"),
             WindowSize(4096, "server", "/api/ps")]
    assert choose_window(found).tokens == 4096
    assert choose_window(found[:2]).source == "config"
    assert choose_window([None]) is None


@pytest.mark.parametrize("kind, consequence", [("llama.cpp", "refuse"), ("ollama", "front"),
                                               ("lmstudio", "middle"), ("mystery", "may refuse")])
def test_fit_check_before_sending(kind, consequence):
    window = WindowSize(512, "server", "/props")
    # 511 prompt tokens leave one for the reply: the most llama.cpp accepts (512 is refused)
    assert fit_check(511, 0, window, kind).fits
    over = fit_check(600, 0, window, kind)
    assert not over.fits and over.over_by == 600 - 511 and consequence in over.consequence
    short = fit_check(500, 64, window, kind)  # 500 + 64 > 512: the reply has 12 tokens of room
    assert not short.fits and short.over_by == 0 and short.reply_room == 12
    assert fit_check(500, 0, None).fits is None


def test_ranges_from_a_built_request_follow_the_rendered_document():
    template, tokenizer = builtin_template("qwen3"), get_tokenizer("qwen3")
    messages = [Message("system", "You are terse.", provenance=Provenance("system_prompt", True), id="s"),
                Message("user", "alpha " * 40, provenance=Provenance("user", True), id="u")]
    view = build_request(messages, RequestSettings(template, tokenizer, policy=PolicySettings()))
    ranges = shape_ranges(view.shape)
    assert [r.message_id for r in ranges] == ["s", "u"]
    assert ranges[0].start == 0 and ranges[-1].end < view.sent_tokens  # the generation prompt follows
    assert sum(r.end - r.start for r in ranges) + (view.sent_tokens - ranges[-1].end) == view.sent_tokens


def test_a_truncated_flag_without_counts_is_still_said():
    """llama.cpp-like `truncated: true` with no usage and no timings: the server says it cut the prompt; that is
    a finding (loud), not 'nothing to compare'; how much and where stay unknown."""
    receipt = compare(100, True, Reported(truncated=True), RANGES, "llama.cpp")
    assert receipt.verdict == DROPPED and receipt.received is None and receipt.where is None
    assert "truncated" in receipt.summary and "how many" in receipt.summary
    assert receipt.observed_window is None and not receipt.affected


def test_what_ollama_keeps_of_an_overflow_depends_on_its_version():
    from tui.context.fit import ollama_cut
    # 0.30.11 on (llm/llama_server.go contextShiftPromptLimit): num_ctx - max((num_ctx - keep) // 2, 1)
    for num_ctx in (4096, 4097, 300, 301):
        for keep in (4, 5):
            kept = num_ctx - max((num_ctx - keep) // 2, 1)
            low, high = ollama_cut.num_ctx_range(kept, "0.30.11")
            assert low <= num_ctx <= high and high - low <= 2, (num_ctx, keep, low, high)
    assert ollama_cut.num_ctx_range(2050, "0.33.0-rc2") == (4094, 4096)
    assert ollama_cut.num_ctx_range(4096, "0.5.7") == (4096, 4097)  # before: the whole window (or all but one)
    assert ollama_cut.explained(4096, "0.5.7")[1] == 4096 and ollama_cut.explained(2050, "v0.31.0")[1] == 4094
    assert ollama_cut.halves("weird") is None and ollama_cut.explained(2050, "")[1] == 2050  # unknown: the least


def test_a_message_split_by_text_of_no_message_is_named_once_with_its_sums():
    # u1's turn holds a line of the template's own ([30, 34): no message) between two pieces of its text
    spans = [("u1", "content", 0, 1, 30), ("", "marker", 1, 2, 4), ("u1", "content", 2, 3, 20),
             ("a1", "content", 3, 4, 10)]
    ranges = message_ranges(spans, {"u1": "user", "a1": "assistant"})
    assert [r.message_id for r in ranges] == ["u1", "u1", "a1"]
    hit = affected_messages(ranges, 0, 60)
    assert [(a.message_id, a.lost, a.tokens, a.text_lost, a.whole) for a in hit] == [
        ("u1", 50, 50, 50, True), ("a1", 6, 10, 6, False)]
