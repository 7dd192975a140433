"""A tokenizer switch is an operation in the one history, like a template or policy switch (issue 19, item 1)."""

from __future__ import annotations

from controller_helpers import Harness


async def test_a_tokenizer_picked_is_undone_to_the_one_before(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    made = Harness(tmp_path)
    try:
        ctl = await made.ready()
        first = ctl.wb.tokenizer.name
        ctl.load_tokenizer("cl100k_base")
        await made.idle()
        assert ctl.wb.tokenizer.name == "cl100k_base" and ctl.history.next_label == "tokenizer cl100k_base"
        assert ctl.history.undo()
        assert ctl.wb.tokenizer.name == first
        assert ctl.history.redo() and ctl.wb.tokenizer.name == "cl100k_base"
    finally:
        made.ctl.close()
