"""The app against a loopback server that cuts like Ollama: the cut is said under the reply in the chat, in the
status line and in the Ledger tab, with the number of tokens and the messages affected."""

from __future__ import annotations


import pytest

from app_helpers import isolated, make_app, plain, settle
from tui.app.chat.transcript import ChatView
from tui.app.chat.composer import Composer
from tui.app.pane.cost_tab import CostView
from tui.context.messages import Message, Provenance
from tui.sessions.store import save_session
from tui.sessions.model import Session
from window_servers import OLLAMA_KEEP, WindowServer, ollama_kept_after_keep

SIZE = (160, 48)


@pytest.fixture()
def sessions(monkeypatch, tmp_path):
    return isolated(monkeypatch, tmp_path)


def long_session() -> Session:
    words = " ".join(f"apple{i}" for i in range(150))
    return Session(title="long", messages=[
        Message("system", "You are terse.", provenance=Provenance("system_prompt", True), id="sys"),
        Message("user", words, id="long1"),
        Message("assistant", words, provenance=Provenance("model", True), id="long2")])


async def test_a_front_cut_is_said_in_the_chat_status_and_ledger(sessions, tmp_path):
    path = tmp_path / "long.json"
    save_session(long_session(), path)
    with WindowServer("ollama", n_ctx=256, ps=True) as server:
        app = make_app(tmp_path, file=path, flags={"base_url": server.url})
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await settle(pilot, app)
            await pilot.press(*"which came first", "enter")
            await settle(pilot, app)
            assert not app.controller.wb.session.requests and app.query_one(Composer).text == "which came first"
            await pilot.press("enter")  # warned it will not fit (F9 would fit it); sent as it is, to see the cut
            for _ in range(100):
                await settle(pilot, app)
                if not app.controller.streaming:
                    break
            record = app.controller.wb.session.requests[-1]
            lost = record.received["sent"] - (OLLAMA_KEEP + ollama_kept_after_keep(256))
            said = f"the server dropped ~{lost} of"
            chat = app.query_one(ChatView)
            chat.scroll_end(animate=False)
            await settle(pilot, app)
            rows = [chat.render_line(y).text for y in range(chat.size.height)]
            assert any(said in row for row in rows), (record.received, dict(app.controller.notes), plain(app.query_one("#status")))
            assert said in plain(app.query_one("#status"))
            app.query_one("#tabs").active = "ledger"
            await settle(pilot, app)
            ledger = plain(app.query_one("#ledger-table"))
            assert f"request {record.number}: {said}" in ledger and "sys (system" in ledger, ledger
            app.save_screenshot("received.svg", str(tmp_path))
    # replayed later, the step says what the server did and what it cost, as recorded then
    replay = make_app(tmp_path, offline=True, file=path, replay=True)
    async with replay.run_test(size=SIZE) as pilot:
        await settle(pilot, replay)
        await pilot.press("end")
        await settle(pilot, replay)
        info = plain(replay.screen.query_one("#replay-info"))
        assert f"SERVER DROPPED ~{lost} tokens from the front" in info and "sys" in info, info
        assert "before sending: this request" in info and "will not fit" in info, info
        assert "cost" in info
        replay.screen.query_one("#tabs").active = "cost"
        await settle(pilot, replay)
        cost = plain(replay.screen.query_one(CostView))
        assert f"{record.document_tokens}" in cost.replace(",", ""), cost
        replay.save_screenshot("replay-received.svg", str(tmp_path))
