"""Found by a review (fixed since; the test failed before): The Ledger's 'is this text still in the window?' (still_in_window) says a line the curated policy trimmed out of a
log is in the window: a trimmed message is kept, so every phrase of its full text counts as sent."""

from test_curated_policy import request, store
from tui.context.policy.truncation import still_in_window


def test_a_line_trimmed_out_is_not_said_to_be_in_the_window():
    messages, _line = store(1, 311)
    view = request(messages, 1500)
    cut_line = messages[12].content.split("\n")[5]  # a DEBUG line the policy cut (only line 312 is kept)
    assert cut_line not in view.document.text
    hits = [h for h in still_in_window([m.text() for m in messages], view.plan, cut_line) if h["message"] == 12]
    assert hits and not hits[0]["kept"], hits
