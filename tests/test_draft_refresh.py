"""After a keystroke's splice, the settle that follows reads the spliced document again instead of rendering the
whole conversation (issue 23: a full render at 500k tokens took 150-330 ms of the worker and delayed the next key).
What it gives must be what the full computation gives, field for field; where the draft could move the plan or
the tools' cost, it must give way to the full computation."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchmarks.corpus import conversation
from tui.context import builtin_template, get_tokenizer
from tui.context.messages import message_from_dict
from tui.controller.workbench import Workbench
from tui.sessions.model import Session
from tui.sessions.store import load_session

SAMPLES = sorted((Path(__file__).resolve().parents[1] / "sample_sessions").glob("*.ctxpane.json"))
DRAFTS = ["And now, what about the cache?", "é unicode 漢字 🙂 and a tab\there", "x" * 3000, "a\nb\n\nc"]


def bench(session: Session, template: str = "chatml") -> Workbench:
    wb = Workbench(session, builtin_template(template))
    wb.set_tokenizer(get_tokenizer("o200k_base"))
    wb.draft = "And now"
    wb.view = wb.compute()
    wb.template.copies_text_verbatim()  # probed, as the worker does before a splice is tried
    return wb


def spliced(wb: Workbench, text: str) -> Workbench:
    assert wb.set_draft(text), "the draft was spliced in place"
    return wb


def corpus_session(tokens: int) -> Session:
    session = Session(messages=[message_from_dict(m, i) for i, m in enumerate(conversation(tokens))])
    session.messages.pop()
    return session


@pytest.mark.parametrize("draft", DRAFTS, ids=["words", "unicode", "long", "lines"])
@pytest.mark.parametrize("source", ["corpus", *[p.name for p in SAMPLES]])
def test_the_refreshed_view_is_the_full_computation(source, draft):
    session = corpus_session(20_000) if source == "corpus" else \
        load_session(next(p for p in SAMPLES if p.name == source)).session
    session.tools = None  # (tools are the full path's: a render without them prices them)
    wb = bench(session)
    if not wb.set_draft(draft):
        pytest.skip("this template or draft is not spliced")
    refreshed = wb.refreshed()
    if wb.view.ledger:  # a sample that drops: the full computation is owed, and said so
        assert refreshed is None
        return
    assert refreshed is not None
    full = wb.compute()
    for name in full.__dataclass_fields__:
        assert getattr(refreshed, name) == getattr(full, name), name


def test_a_previous_request_gives_the_same_cache_prefix():
    wb = bench(corpus_session(20_000))
    wb.previous = wb.view.shape  # as after a send: the next request is compared with this one
    spliced(wb, "And now, something else entirely")
    refreshed = wb.refreshed()
    assert refreshed is not None and refreshed.prefix == wb.compute().prefix


def test_a_draft_that_no_longer_fits_asks_for_the_full_computation():
    wb = bench(corpus_session(20_000))
    total = wb.view.keep_all_tokens
    wb.session.policy = {"name": "drop-oldest", "context_window": total + 50, "max_tokens": 0}
    wb.view = wb.compute()
    assert not wb.view.ledger
    spliced(wb, "word " * 400)  # past the window: the policy now drops
    assert wb.refreshed() is None
    assert wb.compute().ledger


def test_tools_ask_for_the_full_computation():
    session = corpus_session(5_000)
    session.tools = [{"type": "function", "function": {"name": "look", "parameters": {"type": "object"}}}]
    wb = spliced(bench(session), "And now with tools")
    assert wb.refreshed() is None


def test_a_view_not_from_a_splice_is_never_refreshed():
    wb = spliced(bench(corpus_session(5_000)), "And now, spliced")
    wb.view = wb.compute()  # replaced since (a full computation)
    assert wb.refreshed() is None
