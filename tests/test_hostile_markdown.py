"""Hostile Markdown in a reply: rendering is bounded (what the text expands to, what is laid out, time), and a
rendering past its budget or one that fails is plain text, on the loop and in the worker."""

from __future__ import annotations

import pytest
from rich.markdown import Markdown

from tui.app.chat.layout import ChatLayout
from tui.app.chat.markdown import MarkdownRenders, OverBudget, markdown_blocks, markdown_or_plain
from tui.context.messages import Message, Provenance

URL = "http://e.example/" + "a" * 1000
REFERENCES = "[x]: " + URL + "\n\n" + "[x] " * 700  # under 4,000 characters: once rendered on the loop


def reply(text: str) -> Message:
    return Message("assistant", text, provenance=Provenance("model", True), id="a1")


def laid_out(text: str) -> ChatLayout:
    layout = ChatLayout()
    layout.update([Message("user", "go", id="u1"), reply(text)], set(), {}, {}, 80)
    layout.wrap_near(0, 0, 1000)  # the view shows both messages: small replies are rendered here, on the loop
    return layout


def test_reference_links_repeating_one_long_address_are_not_expanded():
    assert len(REFERENCES) <= MarkdownRenders.SMALL
    with pytest.raises(OverBudget):  # before: 5 s and 715,000 characters laid out (9,101 lines)
        markdown_blocks(REFERENCES, 80)
    blocks = markdown_or_plain(REFERENCES, 80)
    assert [block.style for block in blocks] == ["body"] and blocks[0].text == REFERENCES


def test_a_small_reply_that_expands_is_not_rendered_on_the_loop():
    layout = laid_out(REFERENCES)
    assert not layout.markdown.done  # handed to the worker, which shows it as plain text
    assert list(layout.markdown.wanted) == [(REFERENCES, layout.width)]
    assert layout.entries[1].body.blocks[0].style == "body"


def test_a_long_reply_of_references_under_the_limit_is_plain_in_the_worker():
    text = "[x]: http://e.example/" + "a" * 30_000 + "\n\n" + "[x] " * 4_000  # 46,000 characters
    blocks = markdown_or_plain(text, 80)
    assert blocks[0].style == "body" and sum(len(block.text) for block in blocks) == len(text)


def test_a_table_too_wide_to_lay_out_is_plain():
    row = "|" + "a|" * 5_000
    text = row + "\n|" + "-|" * 5_000 + "\n" + (row + "\n") * 3
    assert markdown_or_plain(text, 80)[0].style == "body"


def test_a_rendering_that_fails_on_the_loop_is_plain_text(monkeypatch):
    def broken(self, console, options):
        raise ValueError("a reply Rich cannot render")
        yield  # a generator, like Rich's own

    monkeypatch.setattr(Markdown, "__rich_console__", broken)
    layout = laid_out("**bold** reply")  # small: rendered on the loop
    assert layout.entries[1].body.blocks[0].style == "body"
    assert "**bold** reply" in layout.entries[1].body.blocks[0].text


def test_ordinary_markdown_still_renders_on_the_loop():
    layout = laid_out("## Plan\n\n- read [the docs](http://docs.example)\n")
    text = "\n".join(block.text for block in layout.entries[1].body.blocks)
    assert "##" not in text and "the docs (http://docs.example)" in text
