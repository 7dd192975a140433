"""SVG snapshots of the main states (pytest-textual-snapshot). Regenerate with --snapshot-update, then look."""

import shutil
from pathlib import Path

import pytest

from app_helpers import isolated, make_app, settle
from conftest import ROOT
from tui.app.chat.composer import Composer

SAMPLES = ROOT / "sample_sessions"
SIZE = (150, 42)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    isolated(monkeypatch, tmp_path)


def app_for(tmp_path: Path, sample: str | None = None, **flags):
    """The app on a copy of the sample (the app locks and saves the file it opens: never the repository's)."""
    file = None
    if sample:
        file = tmp_path / f"{sample}.ctxpane.json"
        shutil.copyfile(SAMPLES / file.name, file)
    return make_app(tmp_path, offline=True, file=file, flags=flags)


def prepare(draft: str = "", action=None):
    async def run_before(pilot) -> None:
        app = pilot.app
        composer = app.query_one(Composer)
        composer.cursor_blink = False
        await settle(pilot, app)
        if action is not None:
            action(app)
            app.refresh_all()
            await settle(pilot, app)
        if draft:
            composer.insert(draft)
            await settle(pilot, app)
        app.screen.set_focus(None)
        await settle(pilot, app)
    return run_before


def test_offline_start(snap_compare, tmp_path):
    assert snap_compare(app_for(tmp_path), terminal_size=SIZE, run_before=prepare("Is everything fine?"))


def test_mid_conversation(snap_compare, tmp_path):
    assert snap_compare(app_for(tmp_path, "untrusted-document"), terminal_size=SIZE,
                        run_before=prepare("And the overage price?"))


def test_over_budget_with_dropped_turns(snap_compare, tmp_path):
    assert snap_compare(app_for(tmp_path, "long-conversation-dropped-answer"), terminal_size=SIZE,
                        run_before=prepare("And the launch date?"))


def test_forged_header_in_tool_result(snap_compare, tmp_path):
    def fences_off(app):
        app.wb.session.fences = False
    assert snap_compare(app_for(tmp_path, "forged-tool-result"), terminal_size=SIZE, run_before=prepare(action=fences_off))


def test_cache_break(snap_compare, tmp_path):
    def new_time(app):
        text = app.wb.session.messages[0].text().replace("09:07:55", "09:10:02")
        app.wb.set_system_prompt(text)
    assert snap_compare(app_for(tmp_path, "timestamp-in-system-prompt"), terminal_size=SIZE,
                        run_before=prepare("One more question?", new_time))
