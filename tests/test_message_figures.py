"""Per message, in the transcript: its tokens in the request, and for a reply its time to first token, tokens per
second and the cached share of its prompt (issue 19, item 3)."""

from __future__ import annotations

import re

from controller_helpers import Harness
from tui.context.message_figures import MessageFigures, ReplyFacts, message_figures
from tui.context.fit.received import Reported
from tui.sessions.model import Session
from tui.sessions.store import load_session


def test_a_replys_rate_is_the_servers_own_else_its_tokens_over_its_streaming_time():
    facts = ReplyFacts("r", Reported(prompt_tokens=400, cached_tokens=300, completion_tokens=51),
                       first_token_ms=500, elapsed_ms=2500)
    figure = message_figures(None, [facts])["r"]
    # the first token came at 0.5 s, the other 50 in the 2 s after it (found by review: all 51 were counted)
    assert figure.per_second == 50 / 2.0 and figure.first_token_s == 0.5 and figure.cached_share == 0.75
    assert figure.line() == "51 generated · first token 0.50 s · 25.0 tok/s · 75% cached"
    servers = message_figures(None, [ReplyFacts("r", Reported(completion_tokens=51), 500, 2500, 40.0)])["r"]
    assert servers.per_second == 40.0 and servers.cached_share is None


def test_figures_that_cannot_be_known_are_left_out_not_guessed():
    assert message_figures(None, [ReplyFacts("r", Reported(), None, None)])["r"].line() == ""
    # one token, or no time between the first and the last: no rate (a division by nothing)
    one = ReplyFacts("r", Reported(completion_tokens=1), 300, 300)
    assert message_figures(None, [one])["r"].per_second is None
    # a server that says it reused more than it was sent: capped at all of it
    odd = ReplyFacts("r", Reported(prompt_tokens=10, cached_tokens=99))
    assert message_figures(None, [odd])["r"].cached_share == 1.0
    assert MessageFigures(tokens=1234, exact=True).line() == "1,234 tok"


async def test_every_message_shows_the_tokens_every_view_counts(tmp_path, monkeypatch):
    from controller_helpers import conversation
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    made = Harness(tmp_path)
    try:
        ctl = await made.ready(conversation())
        figures = ctl.chat_state().figures
        turns = {turn.message_id: turn.total for turn in ctl.wb.view.hidden.turns if turn.turn >= 0}
        assert set(figures) == {m.id for m in ctl.wb.session.messages}
        for ident, total in turns.items():
            assert figures[ident].startswith(f"~{total:,} tok")  # o200k for a model it is not: an estimate
    finally:
        made.ctl.close()


async def test_a_real_reply_shows_how_it_came_and_keeps_it_in_the_file(llama_server, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    made = Harness(tmp_path, base_url=llama_server, tokenizer="")
    try:
        made.ctl.adopt(Session(params={"temperature": 0, "max_tokens": 16}), None)
        made.ctl.connect()
        await made.idle()
        await made.send("Say hello in three words.")
        await made.send("And again, in other words.")
        ctl = made.ctl
        record = ctl.wb.session.requests[-1]
        reply = ctl.wb.session.messages[-1]
        assert record.reply_id == reply.id and reply.role == "assistant"
        line = ctl.chat_state().figures[reply.id]
        rate = record.reply["timings"]["predicted_per_second"]
        generated = record.reply["usage"]["completion_tokens"]
        assert f"{generated:,} generated" in line and f"{rate:.1f} tok/s" in line, line
        first = re.search(r"first token (\d+\.\d\d) s", line)
        assert first and 0 < float(first.group(1)) <= record.reply["elapsed_ms"] / 1000
        cached = record.reply["timings"]["cache_n"] / record.reply["usage"]["prompt_tokens"]
        assert f"{cached:.0%} cached" in line and cached > 0  # the second request reuses the first one's prefix
        ctl.file.save()
        await made.idle()
        again = load_session(ctl.file.session_file).session
        assert again.requests[-1].reply_id == reply.id
        assert again.requests[-1].reply["first_token_ms"] == record.reply["first_token_ms"]
    finally:
        made.ctl.close()
