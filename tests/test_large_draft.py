"""A big draft: long segments are counted piece by piece, exactly, and typing never waits for the pane."""

from __future__ import annotations

import random

import pytest

from app_helpers import isolated, make_app, settle
from tui.app.chat.composer import Composer
from tui.context.tokens.counting import LONG_SEGMENT, SegmentCache, get_tokenizer

ODD = ["\n", "\n\n", "  ", "   x", "é", "e\u0301", "123456", "def f(x):\n    return x", "😀👍🏽", "\t", "'s",
       " 's", "!!", " \n ", "中文字符", "a, b", "(x) y", "end.", "<|im_start|>"]


def text(words: int, seed: int = 1) -> str:
    rng = random.Random(seed)
    prose = "the quick brown fox jumps over a lazy dog while counting tokens, slowly.".split()
    return " ".join(rng.choice(prose) if rng.random() < 0.8 else rng.choice(ODD) for _ in range(words))


@pytest.mark.bulk
@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base", "qwen3"])
def test_a_long_segment_counted_in_pieces_is_counted_exactly(name):
    tokenizer = get_tokenizer(name)
    assert tokenizer.cuts_at_spaces
    long = text(30_000)
    assert len(long) > LONG_SEGMENT
    cache = SegmentCache()
    cache.starts(tokenizer, long)
    first = len(cache.pieces)
    for edited in (long, long + "x", long[:50_000] + " inserted, words " + long[50_000:], long[:-7]):
        starts, in_bytes = cache.starts(tokenizer, edited)
        whole, whole_bytes = tokenizer.plain_starts(edited)
        assert list(starts) == list(whole) and in_bytes == whole_bytes
    assert len(cache.pieces) <= first + 8  # each edit encoded a piece or two again, not the text


async def test_typing_into_a_big_draft_echoes_and_the_pane_follows(monkeypatch, tmp_path):
    isolated(monkeypatch, tmp_path)
    app = make_app(tmp_path, offline=True)
    async with app.run_test(size=(150, 42)) as pilot:
        await settle(pilot, app)
        composer = app.query_one(Composer)
        composer.load_text(text(40_000, seed=2))
        composer.move_cursor(composer.document.end)
        await settle(pilot, app)
        calls = []
        monkeypatch.setattr(app.wb, "set_draft", lambda value: calls.append(value) or False)
        await pilot.press(*" and more")
        assert composer.text.endswith(" and more") and calls == []  # no splice on the loop for a big draft
        for _ in range(200):
            await settle(pilot, app)
            view = app.wb.view
            if view is not None and view.snapshot.wire[-1]["content"] == composer.text:
                break
        assert app.wb.view.snapshot.wire[-1]["content"] == composer.text
        direct = app.wb.compute()  # the same view computed again, from scratch
        assert direct.snapshot.counts.total == app.wb.view.snapshot.counts.total
        assert composer.wrapped_document.height == sum(len(o) + 1 for o in composer.wrapped_document._wrap_offsets)
