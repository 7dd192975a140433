"""Found by a review (fixed since; the test failed before): A tool call unit with one member superseded or pinned: the other members get no verdict at all, and vanish from
the request with no ledger line (a pinned result is even sent without its call)."""
from tui.context import builtin_template, get_tokenizer
from tui.context.messages import Message, Provenance
from tui.context.policy.curated import Item, curate
from tui.context.policy.truncation import PolicySettings
from tui.context.request import RequestSettings, build_request
from tui.context.untrusted.fences import FenceStyle

TOKENIZER = get_tokenizer("o200k_base")


def count(text):
    return len(TOKENIZER.plain_starts(text)[0])


CALL = [{"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}]


def test_every_message_gets_a_verdict_when_a_unit_member_is_superseded():
    items = [Item(0, "assistant", "", 10, calls=True), Item(1, "tool", "port 1", 10, key="port"),
             Item(2, "tool", "lion facts", 10), Item(3, "user", "port 2", 10, key="port"), Item(4, "user", "lion?", 5)]
    curation = curate(items, 0, None, count)  # no budget: nothing should be lost silently
    assert sorted(e.index for e in curation.entries) == [0, 1, 2, 3, 4]


def test_a_pinned_tool_result_is_not_sent_without_its_call():
    messages = [Message("user", "read the file"),
                Message("assistant", None, tool_calls=CALL),
                Message("tool", "the contents", tool_call_id="c1", provenance=Provenance("tool", False, "tool:read"),
                        pinned=True),
                Message("user", "and now?")]
    settings = RequestSettings(builtin_template("chatml"), TOKENIZER, {}, None, True,
                               PolicySettings("curated", context_window=None), FenceStyle())
    view = build_request(messages, settings)
    kept = view.plan.kept
    dropped = {e.message for e in view.ledger}
    assert 1 in kept or 1 in dropped, "the call message vanished with no verdict"
    assert not (2 in kept and 1 not in kept), "a tool result sent without its call (the API refuses it)"
