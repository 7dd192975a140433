"""Sent against received in the controller: a loopback server that cuts like Ollama (front, to num_ctx), and the
user is told on the request where it happened, with the messages affected; the record keeps it."""

from __future__ import annotations

from controller_helpers import connected
from tui.context.messages import Message, Provenance
from tui.controller.events import StatusChanged
from window_servers import OLLAMA_KEEP, WindowServer, ollama_kept_after_keep

KEPT = OLLAMA_KEEP + ollama_kept_after_keep(256)  # what Ollama keeps of an overflow under num_ctx 256


def long_turns(ctl) -> None:
    """About 400 tokens of earlier conversation, so the next request is over a 256-token num_ctx."""
    words = " ".join(f"apple{i}" for i in range(60))
    ctl.wb.session.messages[1:1] = [Message("user", words, id="long1"),
                                    Message("assistant", words, provenance=Provenance("model", True), id="long2")]
    ctl.changed()


async def test_ollama_front_cut_is_said_under_the_reply_and_recorded(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with WindowServer("ollama", n_ctx=256, ps=True) as server:
        made = await connected(tmp_path, server.url)
        ctl = made.ctl
        long_turns(ctl)
        await made.idle()
        assert ctl.sending.submit("Which fruit came first?")
        await made.until_replied()
        ctl.close()
    statuses = [e.text for e in made.of(StatusChanged)]
    assert any(text.startswith("⚠ will not fit") and "server" in text for text in statuses), statuses
    record = ctl.wb.session.requests[-1]
    assert record.fit["fits"] is False
    assert record.received["verdict"] == "dropped" and record.received["received"] == KEPT
    lost = record.received["sent"] - KEPT
    reply_id = ctl.wb.session.messages[-1].id
    note = ctl.notes[reply_id]
    assert f"the server dropped ~{lost} tokens" in note or f"the server dropped ~{lost} of" in note, note
    assert "sys" in note and "Ollama's num_ctx" in note  # the system prompt was cut, and by whom
    assert note in statuses[-1] or statuses[-1] in note
    assert record.cost is not None and record.cost.get("input_tokens") == KEPT


async def test_a_bad_price_file_is_a_notice_and_the_shipped_prices_are_used(tmp_path, monkeypatch):
    from tui.controller.events import Notice
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    (tmp_path / "config" / "ctxpane").mkdir(parents=True)
    (tmp_path / "config" / "ctxpane" / "prices.toml").write_text("date = [not toml")
    with WindowServer("vllm", n_ctx=4096, model="gpt-4o") as server:
        made = await connected(tmp_path, server.url)
        await made.idle()
        notices = [e.text for e in made.of(Notice)]
        assert any("prices.toml" in text and "using the shipped prices" in text for text in notices), notices
        assert made.ctl.sending.prices is not None and made.ctl.sending.prices.lookup("gpt-4o") is not None
        made.ctl.close()


async def test_a_refusal_for_size_is_said_with_the_servers_figures(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with WindowServer("vllm", n_ctx=300) as server:
        made = await connected(tmp_path, server.url)
        ctl = made.ctl
        long_turns(ctl)
        await made.idle()
        assert ctl.sending.submit("Which fruit came first?")
        await made.until_replied()
        ctl.close()
    record = ctl.wb.session.requests[-1]
    assert record.received["verdict"] == "refused" and record.received["observed_window"] == 300
    question = ctl.wb.session.messages[-1]
    assert question.role == "user" and question.content == "Which fruit came first?"  # no empty reply after it
    note = ctl.notes[question.id]
    assert "✗ the server refused the request as larger than its context window" in note, note
    assert "window 300" in note


async def test_a_refused_request_leaves_no_empty_assistant_message_to_send_next_time(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with WindowServer("vllm", n_ctx=300) as server:
        made = await connected(tmp_path, server.url)
        ctl = made.ctl
        ctl.wb.set_policy(name="drop-oldest")
        before = [m.role for m in ctl.wb.session.messages]
        assert ctl.sending.submit(" ".join(f"pear{i}" for i in range(400)))  # a paste far over the window
        await made.until_replied()
        assert ctl.wb.session.requests[-1].received["verdict"] == "refused"
        assert [m.role for m in ctl.wb.session.messages] == before + ["user"]
        assert ctl.sending.submit("a short question")
        await made.until_replied()
        ctl.close()
    for record in ctl.wb.session.requests:
        assert not [m for m in record.body["messages"] if m["role"] == "assistant" and not m.get("content")]
    assert record.body["messages"][0]["role"] != "assistant"


async def test_the_pane_header_warns_before_sending_while_the_draft_grows_past_the_window(tmp_path, monkeypatch):
    """The live check: no send needed. A short draft fits; a long one is said over the server's window, in red,
    with the figure's source and what this kind of server will do."""
    from tui.app.pane.header import summary_text
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with WindowServer("vllm", n_ctx=300) as server:
        made = await connected(tmp_path, server.url)
        ctl = made.ctl
        ctl.set_draft("short")
        await made.idle()
        pane = ctl.pane_state()
        assert pane.fit is not None and pane.fit.over_by == 0
        assert "over the server's" not in summary_text(pane.view, pane.policy, None, fit=pane.fit).plain
        ctl.set_draft(" ".join(f"pear{i}" for i in range(200)))
        await made.idle()
        pane = ctl.pane_state()
        line = summary_text(pane.view, pane.policy, None, fit=pane.fit)
        over = pane.view.sent_tokens - 299  # a prompt must leave one token of the 300 for the reply
        assert pane.fit.over_by == over > 0
        assert f"⚠ {over} tokens over the server's window 300 (server)" in line.plain, line.plain
        assert "the server will refuse it" in line.plain
        assert any("red" in str(span.style) for span in line.spans if "over" in line.plain[span.start:span.end])
        assert ctl.wb.session.requests == []  # nothing was sent to learn it
        ctl.close()


async def test_the_window_two_cuts_reveal_is_what_the_next_request_is_checked_against(tmp_path, monkeypatch):
    """Ollama without /api/ps: only the model's 40960 is known, so the request 'fits' and is cut at num_ctx 256.
    One cut is a claim (one figure can lie); once a second request's cut agrees, the header and the check before
    sending use the 254 the cuts revealed, not 40960."""
    from tui.controller.receiving import server_window
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with WindowServer("ollama", n_ctx=256, usage=False) as server:
        made = await connected(tmp_path, server.url)
        ctl = made.ctl
        long_turns(ctl)
        long_turns(ctl)  # ~800 tokens: far past 256, past an estimate's doubt too
        await made.idle()
        assert server_window(ctl)[0].tokens == 40960
        assert ctl.sending.submit("Which fruit came first?")
        await made.until_replied()
        first = ctl.wb.session.requests[-1]
        assert first.received["observed_window"] == 254  # num_ctx 254-256 (num_keep 4 or 5): the least
        assert any("claim a window of 254 tokens: planned with once another request agrees" in note
                   for note in first.received["notes"]), first.received["notes"]
        assert server_window(ctl)[0].tokens == 40960
        assert ctl.sending.submit("And which came second?")
        await made.until_replied()
        ctl.close()
    record = ctl.wb.session.requests[-1]
    assert record.fit["fits"] is True and record.received["verdict"] == "dropped", record.received
    assert any("requests 1 and 2 agree" in note for note in record.received["notes"]), record.received["notes"]
    window, _kind = server_window(ctl)
    assert window.tokens == 254 and window.source == "observed", window
    fit = ctl.pane_state().fit  # what the pane's header warns with, before the next request is sent
    assert fit.fits is False and fit.window.tokens == 254 and fit.prompt_tokens > 254


async def test_a_max_tokens_of_the_wrong_type_in_the_sessions_params_is_no_reply_reserve_not_a_crash(tmp_path,
                                                                                                     monkeypatch):
    """params come from the session file (any JSON): a max_tokens that is no count reserves nothing in the
    window check the pane header shows, instead of failing the worker that computes it (the app exited)."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with WindowServer("vllm", n_ctx=4096) as server:
        made = await connected(tmp_path, server.url)
        ctl = made.ctl
        for value in ("lots", [1], {"n": 1}, 1.5, True):
            ctl.wb.session.params = {"max_tokens": value}
            fit = ctl.pane_state().fit
            assert fit.fits is True and fit.max_tokens == 0, (value, fit)
        ctl.wb.session.params = {"max_tokens": 100}
        assert ctl.pane_state().fit.max_tokens == 100
        ctl.close()


async def test_a_window_no_chat_model_has_is_never_planned_with_however_often_claimed(tmp_path, monkeypatch):
    """A server (or a proxy) whose cut keeps 10 tokens of ~800: every later request would be planned to drop
    nearly everything. It is said as the server's claim, twice, and the model's 40960 stays the plan."""
    from tui.controller.receiving import server_window
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with WindowServer("ollama", n_ctx=12, usage=False) as server:
        made = await connected(tmp_path, server.url)
        ctl = made.ctl
        long_turns(ctl)
        long_turns(ctl)
        await made.idle()
        for question in ("Which fruit came first?", "And which came second?"):
            assert ctl.sending.submit(question)
            await made.until_replied()
        ctl.close()
    for record in ctl.wb.session.requests:
        assert record.received["verdict"] == "dropped" and record.received["observed_window"] < 64
        assert any("smaller than any chat model's window" in note for note in record.received["notes"])
    assert server_window(ctl)[0].tokens == 40960


def test_a_revealed_window_is_weighed_against_the_request_and_a_second_figure():
    from tui.context.fit.window import WindowSize
    from tui.context.fit.window_claims import WindowClaim, weigh
    claim = WindowSize(4096, "observed", "a cut")
    assert weigh(claim, 1, 5000, True, 4096, False, None)[0] is None  # one figure: a claim
    kept = weigh(claim, 1, 5000, True, 4096, False, None)[1]
    assert kept == WindowClaim(claim, 1)
    assert weigh(WindowSize(4090, "observed", "a cut"), 2, 5200, True, 4090, False, kept)[0].tokens == 4090
    assert weigh(WindowSize(3000, "observed", "a cut"), 2, 5200, True, 3000, False, kept)[0] is None  # disagree
    assert weigh(WindowSize(300, "observed", "refusal"), 1, 400, True, 400, True, None)[0].tokens == 300  # counted right
    assert weigh(WindowSize(300, "observed", "refusal"), 1, 400, True, 380, True, None)[0] is None  # counted wrong
    assert weigh(WindowSize(7, "observed", "refusal"), 1, 400, True, 400, True, None)[0] is None
    assert weigh(WindowSize(900, "observed", "refusal"), 1, 400, True, 400, True, None)[0] is None  # 400 over 900?


def test_a_cut_whose_window_is_past_what_ctxpane_counted_is_a_claim_then_planned_with():
    """Ollama from 0.30.11 keeps half its window: 2,050 kept of 4,000 sent reveals a window of ~4,094, more than
    ctxpane's count (the server counted a Modelfile SYSTEM, or ctxpane's count is an estimate). It was refused as
    'a cut cannot keep 4094 of 4000 tokens sent', for good."""
    from tui.context.fit.window import WindowSize
    from tui.context.fit.window_claims import weigh
    first = weigh(WindowSize(4094, "observed", "ollama"), 1, 4000, False, 2050, False, None)
    assert first[0] is None and first[1] is not None and "once another request agrees" in first[2]
    second = weigh(WindowSize(4094, "observed", "ollama"), 2, 4100, False, 2050, False, first[1])
    assert second[0] is not None and second[0].tokens == 4094
