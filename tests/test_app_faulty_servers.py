"""Misbehaving servers, met by the app: it stays responsive, the user's message and any partial reply are
saved on disk, the failure is said on screen, and nothing raw reaches the terminal."""

from __future__ import annotations


import pytest

from app_helpers import isolated, make_app, plain, settle
from fault_server import FaultServer
from test_hostile_sinks import assert_clean
from session_files import session_data

SIZE = (160, 48)
# scenario -> the partial reply the session must keep (PARTIAL in fault_server is "partial reply kept")
SCENARIOS = {
    "cut": "partial reply kept", "nodone": "partial reply kept", "garbage": None, "errevent": None,
    "boom": None, "overflow": None, "missing": None, "choicestr": "partial reply kept",
    "contentnum": "partial reply kept", "usagelist": "partial reply kept", "bigint": "partial reply kept",
    "deep": "partial reply kept", "badutf8": "partial reply kept", "longline": "partial reply kept",
    "markup": None, "hugeerror": None, "shortlength": None, "echokey": "partial reply kept",
}

COMPLETE = {"badutf8"}  # bad bytes are replaced and the reply ends normally


@pytest.fixture()
def sessions(monkeypatch, tmp_path):
    return isolated(monkeypatch, tmp_path)


@pytest.fixture(scope="module")
def server():
    with FaultServer(delay=0.01) as running:
        yield running


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
async def test_app_survives_and_keeps_everything(sessions, tmp_path, server, scenario, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-never-shown-0123456789")
    app = make_app(tmp_path, flags={"base_url": f"{server.url}/{scenario}"})
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot, app)
        await pilot.press(*"hello there", "enter")
        for _ in range(100):  # a reply that fails may take a moment (bounded reads, timeouts)
            await settle(pilot, app)
            if not app.controller.streaming:
                break
        assert not app.controller.streaming, "the reply never ended"
        assert_clean(app, scenario)
        await pilot.press(*"still typing")  # responsive: the composer takes keys
        await settle(pilot, app)
        assert app.query_one("Composer").text == "still typing"
        saved = session_data(app.session_file)
        assert saved["messages"][0]["content"] == "hello there"
        expected = SCENARIOS[scenario]
        if expected:
            assert saved["requests"][-1]["reply"]["content"].startswith(expected)
            assert saved["messages"][-1]["role"] == "assistant"
            assert saved["messages"][-1]["content"].startswith(expected)
            assert saved["messages"][-1].get("incomplete") or scenario in COMPLETE
        assert "sk-never-shown" not in app.session_file.read_text()
        status = plain(app.query_one("#status"))
        assert status.strip(), "the failure is said in the status line"
