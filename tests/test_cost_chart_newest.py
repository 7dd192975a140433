"""Found by a review (fixed since; the test failed before): The Cost chart's first show mounts its plots and draws the rows it was given after the refresh; a second show
before that refresh draws the newer rows at once, and then the deferred first call draws the OLD rows over them: the
chart shows a stale series until the next update."""
import pytest
from textual.app import App

import tui.app.pane.cost_tab as cost_tab
from tui.app.pane.cost_tab import CostTab


class Host(App):
    def compose(self):
        yield CostTab()


@pytest.mark.asyncio
async def test_the_chart_shows_the_newest_rows(monkeypatch):
    drawn = []
    real = cost_tab.draw
    monkeypatch.setattr(cost_tab, "draw", lambda plt, title, ours, theirs: (drawn.append(list(ours)), real(plt, title, ours, theirs)))
    app = Host()
    async with app.run_test() as pilot:
        tab = app.query_one(CostTab)
        old = [{"request": 1, "sent": 10, "keep_all": 10}]
        new = old + [{"request": 2, "sent": 20, "keep_all": 30}]
        tab.show(old, (11, 11), {})
        tab.show(new, (21, 31), {})
        await pilot.pause()
        await pilot.pause()
        assert drawn[-1] != [10, 11], drawn  # the last series drawn is the newest (per request: 10, 20, 21; or in all)
        assert drawn[-2:] == [[10, 20, 21], [10, 30, 51]], drawn
