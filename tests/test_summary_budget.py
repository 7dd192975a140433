"""Summarise within budget: the summary call fits the window, is made once per dropped range, and the
Tokens tab never shows two contradicting figures."""

from __future__ import annotations

import pytest

from controller_helpers import Harness, connected
from fault_server import FaultServer
from tui.context.policy.truncation import PolicySettings
from tui.context.messages import Message, Provenance
from tui.context.request import RequestSettings, build_request
from tui.context.policy.summary_call import summary_call
from tui.context.templates.library import builtin_template as get_template
from tui.context.tokens.counting import get_tokenizer
from tui.controller.events import StatusChanged
from tui.sessions.model import Session

WINDOW = 150


def long_turns(count: int = 8, words: int = 60) -> list[Message]:
    return [Message("user" if i % 2 == 0 else "assistant", f"turn {i} " + "words " * words, id=f"t{i}",
                    provenance=Provenance("user" if i % 2 == 0 else "model", True)) for i in range(count)]


def summary_calls(server) -> list[dict]:
    return [r["body"] for r in server.requests if r["body"] and not r["body"].get("stream")
            and r["body"].get("messages") and "Summarise" in r["body"]["messages"][0]["content"]]


def test_the_summary_call_fits_a_small_window():
    template, tokenizer = get_template("chatml"), get_tokenizer("qwen3")
    call = summary_call(long_turns(), template, tokenizer, "m", WINDOW, frozenset())
    assert call.body is not None and call.cut
    assert call.prompt_tokens + call.body["max_tokens"] <= WINDOW
    assert call.body["max_tokens"] >= 8


def test_a_window_with_no_room_makes_no_summary_call():
    call = summary_call(long_turns(), get_template("chatml"), get_tokenizer("qwen3"), "m", 20, frozenset())
    assert call.body is None and "no room" in call.reason


def test_the_tokens_tab_warning_is_the_rendered_count():
    """Seen: "56 sent" beside "need 636": an old, long summary's room was counted while the placeholder
    for the new range was what the document sent. The verdict comes from the rendered document."""
    messages = long_turns(6, 12) + [Message("user", "and now?", id="last")]
    policy = PolicySettings("summarise", context_window=WINDOW, max_tokens=20, summary="old summary " * 150,
                            summary_of=["gone"])
    view = build_request(messages, RequestSettings(get_template("chatml"), get_tokenizer("qwen3"), policy=policy))
    assert view.ledger and view.sent_tokens <= WINDOW - 20
    assert not view.plan.over_budget and view.plan.warning == ""


def test_keep_all_over_budget_names_the_count_sent():
    messages = long_turns(4, 100)
    settings = RequestSettings(get_template("chatml"), get_tokenizer("qwen3"),
                               policy=PolicySettings("keep-all", context_window=WINDOW, max_tokens=40))
    view = build_request(messages, settings)
    assert view.plan.over_budget and view.plan.warning.startswith(f"{view.sent_tokens} tokens")


async def test_a_summary_is_requested_once_per_dropped_range(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FaultServer(delay=0.01) as server:
        made = await connected(tmp_path, server.url + "/ok")
        ctl = made.ctl
        turns = long_turns(8, 10)
        for turn in turns[::2]:  # untrusted turns: the summary comes back fenced and takes more room than planned
            turn.provenance = Provenance("tool", False, "tool:fetch")
        ctl.wb.session.messages.extend(turns)
        ctl.wb.set_policy(name="summarise", context_window=WINDOW, max_tokens=20)
        ctl.refresh()
        ctl.submit("what now?")
        await made.idle()
        calls = summary_calls(server)
        assert len(calls) == 1, [c["messages"][-1]["content"][:60] for c in calls]
        assert any("summary made" in e.text for e in made.of(StatusChanged))
        ctl.close()


async def test_the_summary_request_fits_the_window_on_the_real_server(llama_server, tmp_path, monkeypatch):
    """The server's own count of the summary call's prompt, plus its max_tokens, is within the window."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    made = Harness(tmp_path, base_url=llama_server, tokenizer="")
    made.ctl.adopt(Session(params={"temperature": 0}, messages=long_turns(8, 60)), None)
    made.ctl.connect()
    await made.idle()
    ctl = made.ctl
    assert ctl.client is not None
    ctl.wb.set_policy(name="summarise", context_window=WINDOW, max_tokens=16)
    dropped = long_turns(8, 60)
    call = await ctl.worker.run(lambda: ctl.wb.summary_request(dropped))
    assert call.body is not None
    reply = await ctl.client.chat(call.body)
    assert reply.usage["prompt_tokens"] + call.body["max_tokens"] <= WINDOW, (reply.usage, call.prompt_tokens)
    ctl.close()


@pytest.fixture(autouse=True)
def _no_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
