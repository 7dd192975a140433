"""Sessions are titled from their first user message, renamable, and the browser lists the title."""

from __future__ import annotations

from controller_helpers import connected, harness  # noqa: F401 - harness is a fixture
from fault_server import FaultServer
from tui.controller.events import SessionChanged
from tui.controller.titling import clean_title
from tui.sessions.model import Session
from tui.sessions.store import list_sessions


def test_a_title_is_one_bounded_line():
    assert clean_title("\n\n  Plan   the\ttrip \nsecond line") == "Plan the trip"
    assert len(clean_title("x" * 500, 60)) == 60 and clean_title("x" * 500, 60).endswith("…")
    assert clean_title("   \n ") == ""


async def test_the_first_message_titles_an_untitled_session_and_the_browser_shows_it(tmp_path, monkeypatch):
    """Seen: every saved session was called "New session"."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FaultServer(delay=0.01) as server:
        made = await connected(tmp_path, server.url + "/ok")
        ctl = made.ctl
        ctl.adopt(Session(), None)
        ctl.submit("How big is the quota for the team drive?\nAnd the price?")
        await made.idle()
        assert ctl.wb.session.title == "How big is the quota for the team drive?"
        assert made.of(SessionChanged)[-1].title == ctl.wb.session.title
        ctl.submit("and later?")
        await made.idle()
        assert ctl.wb.session.title == "How big is the quota for the team drive?"  # named once
        assert ctl.rename_session("  Quota\nquestions ")
        await made.idle()
        assert ctl.wb.session.title == "Quota" and made.of(SessionChanged)[-1].title == "Quota"
        assert not ctl.rename_session("  ")
        ctl.close()
        rows = list_sessions(tmp_path / "sessions")
        assert [info["title"] for _path, info in rows] == ["Quota"]
