"""At 80x24 every tab of the context pane is on screen and can be clicked."""

from __future__ import annotations

from textual.widgets import Tab

from app_helpers import isolated, make_app, settle
from tui.app.pane.pane import TABS, ContextPane


async def test_every_tab_is_reachable_at_80x24(tmp_path, monkeypatch):
    isolated(monkeypatch, tmp_path)
    app = make_app(tmp_path, offline=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        pane = app.query_one(ContextPane)
        for tab_id in TABS:  # all on screen at once (a click scrolls the tab row: checked before any)
            tab = app.query_one(f"#--content-tab-{tab_id}", Tab)
            assert tab.region.right <= pane.region.right, (tab_id, tab.region)  # whole, not cut at the edge
        for tab_id in TABS:
            await pilot.click(f"#--content-tab-{tab_id}")
            await pilot.pause()
            assert pane.active == tab_id


async def test_a_wide_pane_keeps_the_full_labels(tmp_path, monkeypatch):
    isolated(monkeypatch, tmp_path)
    app = make_app(tmp_path, offline=True)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot, app)
        assert str(app.query_one("#--content-tab-document", Tab).label) == "Document"
