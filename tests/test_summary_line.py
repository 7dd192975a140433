"""The summarise policy says how many messages its summary stands for (issue 18): it said "8 messages replaced by
one summary" where the summary was made of 6 (two more were left out after it was made)."""

from __future__ import annotations

from tui.context.policy.truncation import PolicySettings
from tui.context.untrusted.fences import FenceStyle
from tui.context.messages import Message
from tui.context.request import RequestSettings, build_request
from tui.context.templates.library import builtin_template
from tui.context.tokens.tokenizers import get_tokenizer


def view_with(summary_of: list[str], window: int):
    messages = [Message("user" if i % 2 == 0 else "assistant", f"turn {i} " + "words " * 30, id=f"t{i}")
                for i in range(12)]
    policy = PolicySettings("summarise", context_window=window, max_tokens=16, summary="They talked about words.",
                            summary_cost=40, summary_of=summary_of)
    return build_request(messages, RequestSettings(builtin_template("qwen3"), get_tokenizer("qwen3"), policy=policy,
                                                   fences=FenceStyle(enabled=False)))


def test_the_line_counts_the_summarised_messages_and_says_what_else_was_left_out():
    first = view_with([], 240)
    dropped = [entry.message_id for entry in first.ledger]
    assert len(dropped) >= 4
    view = view_with(dropped[:-2], 240)  # a summary made when two fewer were left out
    assert view.summarised == len(dropped) - 2 and len(view.ledger) == len(dropped)
    line = view.summary_line()
    assert line.startswith(f"summarise: {len(dropped) - 2} messages replaced by one summary; 2 more left out")
    assert "cost 40 tokens" in line
    whole = view_with(dropped, 240)
    assert whole.summary_line() == (f"summarise: {len(dropped)} messages replaced by one summary; the summary cost "
                                    "40 tokens to make")
    assert "pending a model call" in first.summary_line()
