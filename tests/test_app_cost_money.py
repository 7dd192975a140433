"""The Cost tab with money: a priced model (gpt-4o in the shipped table) shows what each request paid and the
running total, and the keep-all curve; a model without a price shows tokens only."""

from __future__ import annotations

from decimal import Decimal

import pytest

from app_helpers import isolated, make_app, plain, settle
from tui.app.pane.cost_tab import CostView
from window_servers import WindowServer

SIZE = (160, 48)


@pytest.fixture()
def sessions(monkeypatch, tmp_path):
    return isolated(monkeypatch, tmp_path)


async def send(pilot, app, text: str) -> None:
    await pilot.press(*text, "enter")
    for _ in range(100):
        await settle(pilot, app)
        if not app.controller.streaming:
            break


async def cost_tab(tmp_path, model: str) -> tuple[str, list]:
    with WindowServer("vllm", n_ctx=4096, model=model) as server:
        app = make_app(tmp_path, flags={"base_url": server.url})
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await settle(pilot, app)
            await send(pilot, app, "first question")
            await send(pilot, app, "second question")
            app.query_one("#tabs").active = "cost"
            await settle(pilot, app)
            app.save_screenshot(f"cost-{model}.svg", str(tmp_path))
            assert (tmp_path / f"cost-{model}.svg").stat().st_size > 0
            return plain(app.query_one(CostView)), list(app.controller.wb.session.requests)


async def test_a_priced_model_shows_money_per_request_and_the_keep_all_curve(sessions, tmp_path):
    shown, records = await cost_tab(tmp_path, "gpt-4o")
    first, second = (record.cost for record in records)
    # gpt-4o: $2.50 per million input tokens, $10 per million output; the loopback replies with 1 token and
    # reports no cached tokens, and these short prompts are under OpenAI's 1,024-token cache minimum.
    for cost in (first, second):
        assert cost["priced"] and cost["cached_tokens"] == 0 and cost["output_tokens"] == 1
        by_hand = Decimal(cost["input_tokens"]) * Decimal("2.50") / 10**6 + Decimal(10) / 10**6
        assert Decimal(repr(cost["paid"])) == by_hand
    total = Decimal(repr(first["paid"])) + Decimal(repr(second["paid"]))
    assert Decimal(repr(second["cumulative"]["paid"])) == total
    assert f"#1   paid ${first['paid']:,.6f}" in shown and f"#2   paid ${second['paid']:,.6f}" in shown, shown
    assert f"so far: paid ${float(total):,.6f}" in shown
    assert "cumulative paid:" in shown and "keep-all" in shown


async def test_a_model_without_a_price_shows_tokens_only(sessions, tmp_path):
    shown, records = await cost_tab(tmp_path, "loop-model")
    assert not records[-1].cost["priced"]
    assert "model loop-model has no price: tokens only" in shown and "paid $" not in shown
