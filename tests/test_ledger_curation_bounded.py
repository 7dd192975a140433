"""Found by a review (fixed since; the test failed before): The Ledger's curation_table lists every message of the session (10,001 rows: ~4 s of Rich rendering on the UI
thread, again on each view update while the Ledger is shown); trust_lines, beside it, is bounded (TRUST_SHOWN)."""
import time

from rich.console import Console

from tui.app.pane.ledger_tab import TRUST_SHOWN, curation_table
from tui.context import builtin_template, get_tokenizer
from tui.context.messages import Message
from tui.context.policy.truncation import PolicySettings
from tui.context.request import RequestSettings, build_request
from tui.context.untrusted.fences import FenceStyle


def test_the_curation_table_is_bounded():
    messages = [Message("user" if i % 2 == 0 else "assistant", f"message {i} about lions {i % 13}") for i in range(10_000)]
    messages.append(Message("user", "lions?"))
    settings = RequestSettings(builtin_template("chatml"), get_tokenizer("o200k_base"), {}, None, True,
                               PolicySettings("curated", context_window=20_000), FenceStyle())
    view = build_request(messages, settings)
    group = curation_table(view, messages)
    table = group.renderables[1]
    started = time.perf_counter()
    Console(width=80, file=open("/dev/null", "w")).print(group)
    took = time.perf_counter() - started
    assert table.row_count <= TRUST_SHOWN * 5, (table.row_count, round(took, 2))
