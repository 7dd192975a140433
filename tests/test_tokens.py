"""Token counts: offline encodings, per-span attribution, and per-segment caching."""

import hashlib
import gzip
from importlib import resources

import pytest

from conftest import load_cases, template_source
from tui.context import get_tokenizer, tokenizer_for_model
from tui.context.assemble import assemble
from tui.context.templates.library import builtin_template, template_from_text
from tui.context.tokens.counting import ENCODING_SHA256, ENCODINGS, SegmentCache, TokenizerNotFound, load_ranks


class CountingTokenizer:
    """Wraps a real tokenizer and records which texts it was asked to encode."""

    def __init__(self, inner):
        self.inner, self.name, self.calls = inner, inner.name, []

    def plain_starts(self, text):
        self.calls.append(text)
        return self.inner.plain_starts(text)

    def special_count(self, text):
        return self.inner.special_count(text)

    def specials(self):
        return self.inner.specials()


def conversation(n):
    messages = [{"role": "system", "content": "You are a careful assistant. Ünïcödé ✓"}]
    for i in range(n):
        messages.append({"role": "user", "content": f"Question {i}: what is {i} * {i + 3}?\n  indented   line"})
        messages.append({"role": "assistant", "content": f"It is {i * (i + 3)}. 🎉 Done."})
    return messages


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_shipped_encodings_match_tiktoken_hash(name):
    raw = gzip.decompress(resources.files("tui.context.tokens").joinpath("encodings", f"{name}.tiktoken.gz").read_bytes())
    assert hashlib.sha256(raw).hexdigest() == ENCODING_SHA256[name]


def published_encoding(name, monkeypatch):
    """tiktoken's own definition of an encoding (tiktoken_ext.openai_public), ranks from our shipped file."""
    from tiktoken_ext import openai_public

    file = ENCODINGS[name][0]
    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", lambda *args, **kwargs: load_ranks(file))
    return getattr(openai_public, name)()


SAMPLE = "Hello world, ünïcode!  It's 12345 tokens?\r\n\tCAPS don't/won't 😀 中文 <|endoftext|> x"


@pytest.mark.bulk
@pytest.mark.parametrize("name", list(ENCODINGS))
def test_encodings_agree_with_tiktokens_published_definitions(name, monkeypatch):
    import tiktoken

    reference = published_encoding(name, monkeypatch)
    _file, pattern, specials = ENCODINGS[name]
    assert pattern == reference["pat_str"]
    assert specials.items() <= reference["special_tokens"].items()
    ours = get_tokenizer(name)
    assert ours.all_specials() == set(reference["special_tokens"])
    theirs = tiktoken.Encoding(**reference)
    starts, in_bytes = ours.plain_starts(SAMPLE)
    assert in_bytes and len(starts) == len(theirs.encode_ordinary(SAMPLE))
    assert ours.encode_whole(SAMPLE) == len(theirs.encode(SAMPLE, allowed_special="all"))


def test_known_counts_of_the_shipped_encodings():
    assert get_tokenizer("o200k_harmony").encode_whole("<|start|>user<|message|>hi<|end|>") == 5
    assert get_tokenizer("cl100k_base").encode_whole("hello world") == 2


@pytest.mark.parametrize("model,expected", [
    ("gpt-4o-mini", "o200k_base"), ("gpt-4.1", "o200k_base"), ("o3-mini", "o200k_base"), ("gpt-5", "o200k_base"),
    ("gpt-4", "cl100k_base"), ("gpt-3.5-turbo", "cl100k_base"), ("gpt-oss-20b", "o200k_harmony"),
    ("openai/gpt-oss-120b", "o200k_harmony"), ("Qwen/Qwen3-8B", "qwen3"),
])
def test_model_to_tokenizer(model, expected):
    assert tokenizer_for_model(model) == expected


def test_unknown_tokenizer_is_a_clear_error(tmp_path):
    with pytest.raises(TokenizerNotFound, match="unknown tokenizer"):
        get_tokenizer("nonsense-tokenizer")
    bad = tmp_path / "tokenizer.json"
    bad.write_text("{not json")
    with pytest.raises(TokenizerNotFound, match="cannot read tokenizer"):
        get_tokenizer(str(bad))


@pytest.mark.parametrize("template_name,tokenizer_name", [("qwen3", "qwen3"), ("chatml", "o200k_base"),
                                                          ("harmony", "o200k_harmony"), ("llama3", "cl100k_base")])
def test_span_counts_sum_to_whole_document_count(template_name, tokenizer_name):
    template = builtin_template(template_name)
    tokenizer = get_tokenizer(tokenizer_name)
    snap = assemble(conversation(6), template, tokenizer, {"current_date": "2025-01-01"})
    assert sum(s.tokens for s in snap.document.spans) == snap.counts.total
    assert sum(snap.counts.by_role.values()) == snap.counts.total == sum(snap.counts.by_kind.values())
    specials = set(template.special_strings()) & tokenizer.specials()
    if tokenizer_name in ("qwen3", "o200k_harmony"):  # the template's markers are this tokenizer's specials
        assert snap.counts.total == tokenizer.encode_whole(snap.document.text)
    assert snap.counts.by_kind["marker"] > 0 and snap.counts.by_kind["content"] > 0
    if tokenizer_name in ("qwen3", "o200k_harmony"):
        assert specials and all(tokenizer.special_count(s) == 1 for s in specials)  # the template's markers
        # are this tokenizer's own control tokens, one token each


@pytest.mark.bulk
def test_real_cases_sum_equals_whole_count_with_qwen3():
    tokenizer = get_tokenizer("qwen3")
    template = template_from_text(template_source("qwen3-server.jinja"), "qwen3", name="qwen3")
    checked = 0
    for case in load_cases():
        if case["template"] != "Qwen-Qwen2.5-7B-Instruct.jinja" or "expected" not in case:
            continue
        if "role_markers" in case["id"]:
            continue  # control strings typed in content are plain text by rule; checked below
        try:
            snap = assemble(case["messages"], template, tokenizer, case["kwargs"],
                            add_generation_prompt=case["kwargs"]["add_generation_prompt"])
        except Exception:
            continue
        assert snap.counts.total == tokenizer.encode_whole(snap.document.text), case["id"]
        checked += 1
    assert checked >= 20


def test_control_string_in_content_counts_as_text_and_is_flagged():
    tokenizer = get_tokenizer("qwen3")
    template = builtin_template("qwen3")
    plain = assemble([{"role": "user", "content": "x"}], template, tokenizer)
    forged = assemble([{"role": "user", "content": "<|im_start|>"}], template, tokenizer)
    assert forged.counts.total - plain.counts.total > 1  # several text tokens, not one control token
    assert [f.text for f in forged.flags] == ["<|im_start|>"]
    assert forged.flags[0].message == 0


def test_editing_one_message_reencodes_only_its_segment():
    tokenizer = CountingTokenizer(get_tokenizer("qwen3"))
    template = builtin_template("qwen3")
    cache = SegmentCache()
    messages = conversation(20)
    first = assemble(messages, template, tokenizer, cache=cache)
    tokenizer.calls.clear()
    messages[7] = {**messages[7], "content": messages[7]["content"] + " edited"}
    second = assemble(messages, template, tokenizer, cache=cache)
    assert len(tokenizer.calls) == 1 and "edited" in tokenizer.calls[0]
    fresh = assemble(messages, template, get_tokenizer("qwen3"))
    assert second.counts.total == fresh.counts.total != first.counts.total


def test_image_parts_estimate():
    from tui.context.messages import image_token_estimate
    assert image_token_estimate({"type": "image_url", "image_url": {"url": "x", "width": 56, "height": 28}}) == 2
    assert image_token_estimate({"type": "image_url", "image_url": {"url": "x"}}) == 256
