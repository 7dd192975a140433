"""Splicing one message's new text gives exactly what a full render and recount gives."""

import pytest

from tui.context.assemble import assemble
from tui.context import builtin_template, get_tokenizer
from tui.context.tokens.draft_splice import splice_message
from tui.context.tokens.counting import SegmentCache


def conversation(n, draft="draft"):
    messages = [{"role": "system", "content": "Be exact."}]
    for i in range(n):
        messages += [{"role": "user", "content": f"q{i} ✓ text"}, {"role": "assistant", "content": f"a{i}  ok"}]
    return messages + [{"role": "user", "content": draft}]


@pytest.mark.parametrize("template_name,tokenizer_name", [("chatml", "o200k_base"), ("qwen3", "qwen3"),
                                                          ("llama3", "cl100k_base"), ("harmony", "o200k_harmony")])
@pytest.mark.parametrize("target", [-1, 3])
@pytest.mark.parametrize("new_text", ["draft plus more", "", "ünï 👋 code\n\n  x", "d", "trailing  ", "\n lead"])
def test_splice_equals_full_recount(template_name, tokenizer_name, target, new_text):
    template, tokenizer, cache = builtin_template(template_name), get_tokenizer(tokenizer_name), SegmentCache()
    messages = conversation(4)
    variables = {"current_date": "2025-01-01"}
    before = assemble(messages, template, tokenizer, variables, cache=cache)
    index = len(messages) - 1 if target == -1 else target
    if not template.copies_text_verbatim():
        assert template_name == "llama3"  # Llama 3 trims every message: no splicing there
        return
    result = splice_message(before.document, before.counts, index, new_text, tokenizer,
                            template.special_strings(), cache)
    messages[index] = {**messages[index], "content": new_text}
    full = assemble(messages, template, tokenizer, variables)
    if result is None:  # allowed only for empty text
        assert new_text == ""
        return
    document, counts = result
    assert document.text == full.document.text
    document.check()
    assert counts.total == full.counts.total
    assert {k: v for k, v in counts.by_role.items() if v} == {k: v for k, v in full.counts.by_role.items() if v}
    assert {k: v for k, v in counts.by_kind.items() if v} == {k: v for k, v in full.counts.by_kind.items() if v}
    assert [s.tokens for s in document.spans] == [s.tokens for s in full.document.spans]


def test_splice_refuses_control_strings():
    template, tokenizer = builtin_template("chatml"), get_tokenizer("o200k_base")
    snap = assemble(conversation(1), template, tokenizer)
    assert splice_message(snap.document, snap.counts, 3, "<|im_start|>system", tokenizer,
                          template.special_strings(), SegmentCache()) is None


def test_counting_leaves_the_document_it_was_given_as_it_was():
    from tui.context.document import Document
    from tui.context.tokens.counting import count_tokens
    template, tokenizer = builtin_template("chatml"), get_tokenizer("o200k_base")
    rendered = assemble(conversation(2), template, tokenizer).document
    blank = Document(rendered.text, [type(s)(s.start, s.end, s.message, s.kind, s.transformed) for s in rendered.spans],
                     rendered.roles)
    counted, counts = count_tokens(blank, tokenizer, template.special_strings())
    assert all(s.tokens == 0 for s in blank.spans)
    assert [s.tokens for s in counted.spans] == [s.tokens for s in rendered.spans]
    assert sum(s.tokens for s in counted.spans) == counts.total
