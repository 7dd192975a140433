"""Finished replies drawn as Markdown in the chat view; untrusted Markdown stays text (no links, no escapes)."""

from __future__ import annotations

import pytest
from rich.style import Style

from app_helpers import isolated, make_app, settle
from tui.app.chat.markdown import MARKDOWN_LIMIT, markdown_blocks
from tui.app.chat.transcript import ChatView
from tui.context.messages import Message, Provenance
from tui.sessions.model import Session
from tui.sessions.store import save_session
from waiting import eventually

REPLY = """## Plan

Use **three** steps:

- read the file
- count the *words*

| word | count |
|------|-------|
| the  | 12    |

```python
def count(words):
    return len(words)
```
"""


def markdown_session(tmp_path, reply: str = REPLY):
    session = Session(title="markdown", messages=[
        Message("user", "How do I count words?", id="u1"),
        Message("assistant", reply, provenance=Provenance("model", True), id="a1")])
    path = tmp_path / "md.ctxpane.json"
    save_session(session, path)
    return path


def test_markdown_is_rendered_without_links_meta_or_escapes():
    hostile = "[click](http://evil.example) \x1b]52;c;AAAA\x07 **bold** \u202e"
    blocks = markdown_blocks(hostile, 60)
    text = "\n".join(block.text for block in blocks)
    assert "\x1b" not in text and "\u202e" not in text and "␛" in text and "<U+202E>" in text
    assert "**" not in text and "bold" in text and "(http://evil.example)" in text  # the address as text
    styles = [span[2] for block in blocks for span in block.spans]
    assert styles and all(isinstance(s, Style) and not s.link and not s.meta for s in styles)


async def test_a_finished_reply_is_drawn_as_markdown(tmp_path, monkeypatch):
    isolated(monkeypatch, tmp_path)
    app = make_app(tmp_path, offline=True, file=markdown_session(tmp_path))
    async with app.run_test(size=(100, 40)) as pilot:
        await settle(pilot, app)
        view = app.query_one(ChatView)
        text = view.message_text(1)
        assert "##" not in text and "**" not in text and "```" not in text  # the marks are gone
        assert "Plan" in text and "• read the file" in text and "def count(words):" in text
        assert any("word" in line and "count" in line for line in text.splitlines())  # the table's header


async def test_a_reply_too_long_to_render_at_once_stays_plain(tmp_path, monkeypatch):
    isolated(monkeypatch, tmp_path)
    long_reply = "# Title\n\n" + "word " * (MARKDOWN_LIMIT // 5)
    app = make_app(tmp_path, offline=True, file=markdown_session(tmp_path, long_reply))
    async with app.run_test(size=(100, 40)) as pilot:
        await settle(pilot, app)
        assert app.query_one(ChatView).message_text(1).splitlines()[1] == "# Title"


async def test_a_large_reply_is_rendered_off_the_loop(tmp_path, monkeypatch):
    """A reply too big for the frame budget shows as plain text first, then as Markdown from a worker."""
    isolated(monkeypatch, tmp_path)
    big = REPLY * 60  # over the size rendered on the loop: rendered by a worker
    big = big[:MARKDOWN_LIMIT - 10]
    app = make_app(tmp_path, offline=True, file=markdown_session(tmp_path, big))
    async with app.run_test(size=(100, 40)) as pilot:
        await settle(pilot, app)
        view = app.query_one(ChatView)
        await eventually(lambda: "```" not in view.message_text(1), 20, "the reply rendered as Markdown", pilot=pilot)
        assert "```" not in view.message_text(1) and "def count(words):" in view.message_text(1)


async def test_a_reply_streams_as_plain_text_then_shows_as_markdown():
    from textual.app import App

    class Harness(App):
        def compose(self):
            yield ChatView()

    question = Message("user", "How?", id="u1")
    app = Harness()
    async with app.run_test(size=(80, 30)) as pilot:
        view = app.query_one(ChatView)
        view.show([question])
        await pilot.pause()
        view.begin_reply()
        for end in range(10, len(REPLY) + 1, 10):
            view.stream_update(REPLY[:end])
        view.stream_update(REPLY)
        await pilot.pause()
        assert "## Plan" in view.message_text(1) and view.layout_model.rewrapped == 0  # plain while it arrives
        view.end_reply()
        view.show([question, Message("assistant", REPLY, provenance=Provenance("model", True), id="a1")])
        await pilot.pause()
        text = view.message_text(1)
        assert "##" not in text and "• read the file" in text  # Markdown once it is complete, in one layout


def test_html_in_a_reply_is_shown_as_text_not_dropped():
    text = "\n".join(block.text for block in markdown_blocks("Hi\n\n<!-- do not show the user -->\n\n<div>\nsecret\n</div>", 60))
    assert "<!-- do not show the user -->" in text and "secret" in text


@pytest.mark.timeout(60)  # a hang guard; its speed is measured in tests/benchmarks/bench_transcript.py
def test_a_one_megabyte_reply_is_laid_out_plain():
    from tui.app.chat.layout import ChatLayout
    huge = Message("assistant", ("# big\n\n" + "word **bold** `code` " * 50 + "\n\n") * 1000,
                   provenance=Provenance("model", True), id="a1")
    assert len(huge.text()) > 1_000_000
    layout = ChatLayout()
    layout.update([Message("user", "go", id="u1"), huge], set(), {}, {}, 80)
    assert not layout.markdown.wanted  # never rendered as Markdown, on the loop or off it
    assert layout.entries[1].body.blocks[0].style == "body"
