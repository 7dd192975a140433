"""The window check, sent against received and cost in session records: written, read back, bounded, replayed."""

from __future__ import annotations

import asyncio
import hashlib
import json

import pytest
from fault_server import FaultServer

from tui.client.doctor.server import server_template
from tui.client.endpoint import Endpoint
from tui.client.errors import ClientError, ContextOverflow
from tui.client.figures import reported_from_error, reported_from_reply
from tui.client.http import Limits, OpenAIClient
from tui.client.reply import Reply
from tui.client.server_info import probe
from tui.context.policy.truncation import PolicySettings
from tui.context.messages import Message, Provenance
from tui.context.pricing.prices import PriceTableError, parse_price_table
from tui.context.fit.received import Reported, compare_view
from tui.context.request import RequestSettings, build_request
from tui.context.templates.library import builtin_template
from tui.context.tokens.counting import get_tokenizer
from tui.context.fit.window import WindowSize, fit_check
from tui.sessions.model import RequestRecord, Session, now_iso
from tui.sessions.parse import decode_session
from tui.sessions.receipts import record_fit, settle
from session_files import session_data

@pytest.fixture()
def run_cli(cli_in_process):
    return cli_in_process


PRICES = parse_price_table('date = 2026-12-01\n[models."priced-model"]\ninput = 1000\ncached_input = 100\n'
                           'output = 2000\n', "test prices")


def user(mid: str, text: str) -> Message:
    return Message("user", text, provenance=Provenance("user", True), id=mid)


def start(session: Session, view, settings: RequestSettings, body: dict) -> RequestRecord:
    """A record as the app starts one when it sends (tui/app/workbench.py start_record)."""
    record = RequestRecord(number=len(session.requests) + 1, time=now_iso(), body=body,
                           document_hash=hashlib.sha256(view.document.text.encode()).hexdigest(),
                           document_tokens=view.sent_tokens, tokens_exact=view.snapshot.counts.exact,
                           template=settings.template.name, tokenizer=settings.tokenizer.name,
                           message_count=len(session.messages), message_ids=list(view.shape.message_ids),
                           keep_all_tokens=view.keep_all_tokens, predicted_cached=view.prefix.predicted_cached)
    session.requests.append(record)
    return record


def offline_session(tmp_path):
    """Two requests of a chatml/qwen3 session on a 'priced-model': the second cut at the front by 40 tokens."""
    settings = RequestSettings(builtin_template("chatml"), get_tokenizer("qwen3"), policy=PolicySettings())
    session = Session(model="priced-model", template={"name": "chatml", "origin": "builtin"}, tokenizer="qwen3")
    # a system prompt of ~40 tokens: the 20 tokens reused from the cache lie inside it (as after a front cut)
    session.messages = [Message("system", "You are terse. " * 10, provenance=Provenance("system_prompt", True),
                                id="sys"), user("u1", "alpha " * 60)]
    previous = None
    for number, cut in ((1, 0), (2, 40)):
        view = build_request(session.messages, settings, previous, number)
        record = start(session, view, settings, {"model": "priced-model", "messages": view.snapshot.wire})
        window = WindowSize(view.sent_tokens - cut + 1, "server", "test")
        record_fit(record, fit_check(view.sent_tokens, 0, window, "ollama"))
        reported = Reported(prompt_tokens=view.sent_tokens - cut, cached_tokens=0 if number == 1 else 20,
                            completion_tokens=10)
        record.reply = Reply(content="ok", usage={"prompt_tokens": view.sent_tokens - cut}).to_record()
        settle(record, session, view, reported, compare_view(view, reported, "ollama", window), PRICES)
        session.messages += [Message("assistant", "ok", provenance=Provenance("model", True), id=f"a{number}"),
                             user(f"u{number + 1}", "beta " * 30)]
        previous = view.shape
    path = tmp_path / "s.ctxpane.json"
    path.write_text(json.dumps(session.to_dict()))
    return session, path


def test_records_round_trip_through_the_file(tmp_path):
    session, path = offline_session(tmp_path)
    loaded, _version = decode_session(path.read_bytes())
    for stored, fresh in zip(loaded.requests, session.requests):
        assert stored.fit == json.loads(json.dumps(fresh.fit))
        assert stored.received == json.loads(json.dumps(fresh.received))
        assert stored.cost == json.loads(json.dumps(fresh.cost))
    second = loaded.requests[1]
    assert second.fit["fits"] is False and "front" in second.fit["consequence"]
    assert second.received["verdict"] == "dropped" and second.received["where"] == "front"
    assert second.received["affected"][0]["message_id"] == "sys"


def test_cost_records_follow_the_worked_example(tmp_path):
    session, _path = offline_session(tmp_path)
    first, second = (r.cost for r in session.requests)
    # request 1: P = received prompt tokens, nothing cached, 10 out, at $1000/M in and $2000/M out
    p1 = first["input_tokens"]
    assert first["paid"] == pytest.approx(p1 * 1000 / 1e6 + 10 * 2000 / 1e6)
    # request 2: 20 cached at $100/M; the rest at $1000/M; the cache could have served all p1 tokens
    # (llama.cpp rule: the previous prompt whole), so p1 - 20 were lost at $900/M each
    p2 = second["input_tokens"]
    assert second["paid"] == pytest.approx((p2 - 20) * 1000 / 1e6 + 20 * 100 / 1e6 + 10 * 2000 / 1e6)
    assert second["saved_by_cache"] == pytest.approx(20 * 900 / 1e6)
    assert second["lost_tokens"] == p1 - 20 and second["lost_to_cache_break"] == pytest.approx((p1 - 20) * 900 / 1e6)
    assert second["cumulative"]["paid"] == pytest.approx(first["paid"] + second["paid"])


def test_replay_shows_what_the_server_did_and_the_cost(tmp_path, run_cli):
    _session, path = offline_session(tmp_path)
    result = run_cli("replay", str(path), "--check")
    lines = result.stdout.splitlines()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "server processed" in lines[0] and "= sent" in lines[0] and "cost $" in lines[0]
    assert "SERVER DROPPED ~40 tokens from the front (sys" in lines[1] and "so far $" in lines[1]
    steps = [json.loads(line) for line in run_cli("replay", str(path), "--json").stdout.splitlines()]
    assert steps[1]["received"]["verdict"] == "dropped" and steps[1]["cost"]["priced"]
    assert steps[1]["fit"]["fits"] is False


def test_an_old_file_without_these_records_still_loads(tmp_path, run_cli):
    _session, path = offline_session(tmp_path)
    data = session_data(path)
    for request in data["requests"]:
        for key in ("fit", "received", "cost"):
            request.pop(key)
    path.write_text(json.dumps(data))
    result = run_cli("replay", str(path), "--check")
    assert result.returncode == 0 and "server" not in result.stdout and "cost" not in result.stdout


@pytest.mark.parametrize("where, value, field", [
    ("received", {"sent": 5, "verdict": "lost"}, "requests[0].received.verdict"),
    ("received", {"sent": -5, "verdict": "match"}, "requests[0].received.sent"),
    ("received", {"sent": 5, "verdict": "dropped", "affected": [{"message_id": "x" * 300}]},
     "requests[0].received.affected[0].message_id"),
    ("cost", {"paid": "free"}, "requests[0].cost.paid"),
    ("cost", {"cumulative": {"paid": -1.0}}, "requests[0].cost.cumulative.paid"),
    ("fit", {"window": {"tokens": 0}}, "requests[0].fit.window.tokens"),
])
def test_a_bad_record_is_one_line_naming_the_field(tmp_path, run_cli, where, value, field):
    _session, path = offline_session(tmp_path)
    data = session_data(path)
    data["requests"][0][where] = value
    path.write_text(json.dumps(data))
    result = run_cli("replay", str(path), "--check")
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert f"`{field}`" in result.stderr


def test_fields_the_schema_does_not_know_are_not_kept(tmp_path):
    _session, path = offline_session(tmp_path)
    data = session_data(path)
    data["requests"][0]["received"]["injected"] = "x"
    loaded, _version = decode_session(json.dumps(data).encode())
    assert "injected" not in loaded.requests[0].received


@pytest.mark.server
def test_a_session_against_the_real_512_token_server(llama_512, tmp_path, run_cli):
    """Three requests: one that fits, one over the window (refused), one whose reply hits the window."""
    session = run(real_session(llama_512))
    path = tmp_path / "real.ctxpane.json"
    path.write_text(json.dumps(session.to_dict()))
    verdicts = [r.received["verdict"] for r in session.requests]
    assert verdicts == ["match", "refused", "match"]
    assert session.requests[1].fit["fits"] is False and session.requests[1].cost["input_tokens"] == 0
    assert session.requests[2].received["reply_cut"]
    lines = run_cli("replay", str(path), "--check").stdout.splitlines()
    assert "server refused it" in lines[1] and "reply cut at the window" in lines[2]
    assert all("cost: tokens only (no price for tiny-qwen3)" in line for line in lines)


def run(coroutine):
    return asyncio.run(coroutine)


async def real_session(url: str) -> Session:
    async with OpenAIClient(Endpoint(url, "tiny-qwen3", "CTXPANE_NO_KEY"), Limits(read=60)) as client:
        info = await probe(client)
        template, _own = server_template(info)
        settings = RequestSettings(template, get_tokenizer("qwen3"), policy=PolicySettings(), exact=True)
        session = Session(model="tiny-qwen3", template={"name": template.name, "origin": "server:llama.cpp",
                                                        "text": template.source}, tokenizer="qwen3")
        session.messages = [Message("system", "You are terse.", provenance=Provenance("system_prompt", True),
                                    id="sys")]
        for words, max_tokens in ((20, 4), (700, 4), (480, 40)):
            session.messages.append(user(f"u{len(session.messages)}", " ".join(["a"] * words)))
            view = build_request(session.messages[:1] + session.messages[-1:], settings)
            body = {"messages": view.snapshot.wire, "max_tokens": max_tokens, "temperature": 0}
            record = start(session, view, settings, body)
            record_fit(record, fit_check(view.sent_tokens, max_tokens, info.window, info.kind))
            try:
                reply = await client.chat(body)
                record.reply, reported = reply.to_record(), reported_from_reply(reply)
            except ClientError as exc:
                record.reply, reported = {"error": str(exc)}, reported_from_error(exc)
            receipt = compare_view(view, reported, info.kind, info.window, max_tokens)
            settle(record, session, view, reported, receipt, PRICES)
        return session


def hostile_session(reports: list[Reported], prices_text: str) -> bytes:
    """A session of len(reports) requests settled with these server figures and prices; the file's bytes."""
    prices = parse_price_table(prices_text, "user prices")
    settings = RequestSettings(builtin_template("chatml"), get_tokenizer("qwen3"), policy=PolicySettings())
    session = Session(model="m", template={"name": "chatml", "origin": "builtin"}, tokenizer="qwen3")
    session.messages = [user("u1", "hello there")]
    previous = None
    for number, reported in enumerate(reports, start=1):
        view = build_request(session.messages, settings, previous, number)
        record = start(session, view, settings, {"model": "m", "messages": view.snapshot.wire})
        record.reply = Reply(content="ok").to_record()
        settle(record, session, view, reported, compare_view(view, reported, "", None), prices)
        session.messages += [Message("assistant", "ok", provenance=Provenance("model", True), id=f"a{number}"),
                             user(f"u{number + 1}", "more")]
        previous = view.shape
    return json.dumps(session.to_dict()).encode()


M_PRICE = 'date = 2026-12-01\n[models.m]\ninput = 1\noutput = 1\n'


def test_a_server_lying_with_the_largest_counts_it_may_give_still_leaves_a_session_that_opens():
    """Counts at the client's bound (10**12) twice: the running totals of the reply tokens pass the per-request
    bound; the prompt count, past anything the request could be counted as, is a claim and never priced."""
    top = 10 ** 12
    raw = hostile_session([Reported(prompt_tokens=top, completion_tokens=top)] * 2, M_PRICE)
    loaded, _version = decode_session(raw)
    assert loaded.requests[1].cost["cumulative"]["output_tokens"] == 2 * top
    assert loaded.requests[1].cost["cumulative"]["input_tokens"] < 1000
    assert any("usage.prompt_tokens: not reported" in line for line in loaded.requests[1].received["unreported"])
    # llama.cpp's timings: evaluated and reused, each at the bound, add up past it
    reported = reported_from_reply(Reply(content="ok", timings={"prompt_n": top, "cache_n": top}))
    assert reported.received() == (None, "")
    loaded, _version = decode_session(hostile_session([reported], M_PRICE))
    assert loaded.requests[0].received["verdict"] == "unknown"


def test_a_cached_price_above_the_input_price_is_refused_with_one_line():
    """Else the cache 'saves' a negative amount, and the session holding it no longer opens."""
    with pytest.raises(PriceTableError) as caught:
        parse_price_table('date = 2026-12-01\n[models.m]\ninput = 1\ncached_input = 2\noutput = 1\n', "user prices")
    assert "models.m.cached_input" in str(caught.value) and "\n" not in str(caught.value)


def test_a_refusal_naming_an_impossible_window_is_not_taken_as_the_window(tmp_path, run_cli):
    with FaultServer(delay=0) as server:
        async def ask():
            async with OpenAIClient(Endpoint(server.url + "/overflowhuge/v1", "m", "CTXPANE_NO_KEY")) as client:
                await client.chat({"messages": [{"role": "user", "content": "hi"}], "stream": False})
        with pytest.raises(ContextOverflow) as caught:
            run(ask())
    reported = reported_from_error(caught.value)
    assert reported is not None and reported.refused and reported.error_window is None
    assert reported.error_prompt_tokens == 12
    raw = hostile_session([reported], M_PRICE)
    loaded, _version = decode_session(raw)
    assert loaded.requests[0].received["verdict"] == "refused"
    assert loaded.requests[0].received["observed_window"] is None


@pytest.mark.parametrize("cost, shown", [({"priced": True}, "no amount recorded"),
                                         ({"priced": False, "model": "m"}, "tokens only")])
def test_a_cost_record_the_schema_lets_through_with_no_amounts_is_shown_not_a_crash(tmp_path, run_cli, cost, shown):
    """Every field of a cost record has a default: a priced record with no `paid`, or one with no running
    totals, passes the schema, so what shows it must do without them."""
    from tui.app.pane.cost_amounts import money_text  # the Cost tab's money part

    _session, path = offline_session(tmp_path)
    data = session_data(path)
    for request in data["requests"]:
        request["cost"] = cost
    path.write_text(json.dumps(data))
    result = run_cli("replay", str(path), "--check")
    assert result.returncode == 0, result.stderr
    assert all(shown in line for line in result.stdout.splitlines()[:2]), result.stdout
    loaded, _version = decode_session(path.read_bytes())
    text = money_text(loaded.requests, {}).plain
    assert ("no price: tokens only (? input" in text) if not cost["priced"] else ("paid —" in text), text


def test_a_server_saying_it_processed_no_prompt_tokens_reveals_no_window():
    """usage.prompt_tokens = 0: every token sent 'dropped', but a window of 0 is no window (nor a stored one)."""
    loaded, _version = decode_session(hostile_session([Reported(prompt_tokens=0, completion_tokens=1)], M_PRICE))
    received = loaded.requests[0].received
    assert received["verdict"] == "dropped" and received["received"] == 0
    assert received["observed_window"] is None


def test_the_replay_line_of_a_cut_without_figures_says_the_servers_flag_not_0_tokens():
    """`truncated: true` with no count, or with a count equal to what was sent: no tokens to name, no place."""
    from tui.context.fit.received import compare, message_ranges
    from tui.sessions.receipts import received_line, received_record
    ranges = message_ranges([("u1", "content", 0, 1, 100)], {"u1": "user"})
    for reported in (Reported(truncated=True), Reported(prompt_tokens=100, truncated=True)):
        stored = json.loads(json.dumps(received_record(compare(100, True, reported, ranges, "llama.cpp"))))
        line = received_line(stored)
        assert stored["verdict"] == "dropped" and "truncated" in line, line
        assert "~0 tokens" not in line and "from the ?" not in line, line


def test_a_refusal_with_impossible_figures_is_still_a_refusal(tmp_path):
    """llama.cpp's exceed_context_size_error with n_ctx 0 and n_prompt_tokens -5: the figures are unknown, the
    refusal is not (the whole error body failed its shape, so it was taken as another 400)."""
    with FaultServer(delay=0) as server:
        async def ask():
            async with OpenAIClient(Endpoint(server.url + "/overflowlies/v1", "m", "CTXPANE_NO_KEY")) as client:
                await client.chat({"messages": [{"role": "user", "content": "hi"}], "stream": False})
        with pytest.raises(ClientError) as caught:
            run(ask())
    assert isinstance(caught.value, ContextOverflow), caught.value
    reported = reported_from_error(caught.value)
    assert reported.refused and reported.error_window is None and reported.error_prompt_tokens is None
    assert "available context size" in str(caught.value)
