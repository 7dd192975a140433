"""`ctxpane render --json` carries the window, the fit check and the cost: the figures session records carry."""

from __future__ import annotations

import json

import pytest

PRICES = 'date = 2026-12-01\n[models."my-model"]\ninput = 1000\ncached_input = 250\noutput = 3000\n'
SYSTEM = {"role": "system", "content": "You are terse and careful."}


def write(tmp_path, name: str, data) -> str:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)


@pytest.fixture()
def run_cli(cli_in_process):
    return cli_in_process


def render_json(run_cli, *args) -> dict:
    result = run_cli("render", *args, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def body(model: str, system: dict = SYSTEM, turns: int = 3) -> dict:
    messages = [system] + [{"role": "user", "content": f"question {i} " * 20} for i in range(turns)]
    return {"model": model, "messages": messages}


def test_a_priced_model_costs_its_prompt_at_the_table_price(tmp_path, run_cli):
    prices = write(tmp_path, "p.toml", PRICES)
    data = render_json(run_cli, write(tmp_path, "b.json", body("my-model")), "--prices", prices)
    cost, tokens = data["cost"], data["tokens"]["total"]
    # nothing cached on a first request: every prompt token at $1000/M, no reply yet
    assert cost["priced"] and cost["input_tokens"] == tokens and cost["cached_from"] == "predicted"
    assert cost["paid"] == pytest.approx(tokens * 1000 / 1e6) and cost["keep_all_paid"] == cost["paid"]
    assert cost["price"]["origin"].endswith("p.toml") and cost["price"]["table_date"] == "2026-12-01"


def test_model_flag_and_an_unpriced_model(tmp_path, run_cli):
    conv = write(tmp_path, "b.json", body("tiny-qwen3"))
    data = render_json(run_cli, conv)
    assert not data["cost"]["priced"] and data["cost"]["paid"] is None and data["cost"]["input_tokens"] > 0
    priced = render_json(run_cli, conv, "--model", "claude-haiku-4-5")  # from the shipped table
    assert priced["cost"]["priced"] and priced["cost"]["price"]["input"] == 1.0


def test_a_broken_cache_prefix_is_money_lost(tmp_path, run_cli):
    prices = write(tmp_path, "p.toml", PRICES)
    before = write(tmp_path, "before.json", body("my-model", {"role": "system", "content": "You are brief."}, 2))
    after = write(tmp_path, "after.json", body("my-model"))
    data = render_json(run_cli, after, "--previous", before, "--prices", prices)
    cost = data["cost"]
    # the system prompt changed: the prediction keeps only the shared start; the rest of the previous
    # prompt (all of which a cache could have served) is lost, each token at $1000 - $250 = $750/M
    assert cost["cached_tokens"] == data["cache_prefix"]["predicted_cached"] < cost["lost_tokens"] + cost[
        "cached_tokens"]
    assert cost["lost_to_cache_break"] == pytest.approx(cost["lost_tokens"] * 750 / 1e6)
    assert cost["saved_by_cache"] == pytest.approx(cost["cached_tokens"] * 750 / 1e6)


def test_a_users_prices_file_in_the_config_folder(tmp_path, run_cli):
    folder = tmp_path / "config" / "ctxpane"
    folder.mkdir(parents=True)
    (folder / "prices.toml").write_text(PRICES)
    data = render_json(run_cli, write(tmp_path, "b.json", body("my-model")))
    assert data["cost"]["priced"] and data["cost"]["price"]["input"] == 1000.0
    (folder / "prices.toml").write_text("date = 2026-12-01\n[models.x]\ninput = 'free'\n")
    result = run_cli("render", write(tmp_path, "b.json", body("gpt-4o")), "--json")
    assert result.returncode == 0 and json.loads(result.stdout)["cost"]["price"]["input"] == 2.5  # shipped
    assert len(result.stderr.strip().splitlines()) == 1 and "models.x" in result.stderr


def test_a_bad_prices_flag_is_a_usage_error(tmp_path, run_cli):
    result = run_cli("render", write(tmp_path, "b.json", body("m")), "--prices", write(tmp_path, "p.toml", "x = ["))
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1 and "TOML" in result.stderr


def test_the_fit_check_warns_before_sending(tmp_path, run_cli):
    conv = write(tmp_path, "b.json", body("m"))
    data = render_json(run_cli, conv, "--context", "40")
    fit = data["fit"]
    assert fit["fits"] is False and fit["window"] == {"tokens": 40, "source": "config", "detail": "--context"}
    assert fit["over_by"] == data["sent_tokens"] - 39
    summary = run_cli("render", conv, "--context", "40").stderr
    assert "warning: this request" in summary and "will not fit the window of 40" in summary


def test_a_session_file_carries_its_recorded_costs_and_the_keep_all_curve(tmp_path, run_cli):
    from test_session_receipts import offline_session

    session, path = offline_session(tmp_path)
    data = render_json(run_cli, str(path))
    recorded = data["session_cost"]
    assert recorded["requests"] == [json.loads(json.dumps(r.cost)) for r in session.requests]
    assert [row["request"] for row in recorded["curve"]] == [1, 2]
    assert recorded["curve"][-1]["paid_total"] == pytest.approx(session.requests[-1].cost["cumulative"]["paid"])
    # the next request's totals go on from the last recorded ones
    assert data["cost"]["cumulative"]["requests"] == 3 and data["cost"]["model"] == "priced-model"
