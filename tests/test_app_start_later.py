"""The first frame comes before the controller (issue 23): it is built in a thread once the frame is drawn, and
what the user does meanwhile is not lost: keys typed before it exists reach the draft and the pane."""

from __future__ import annotations

import threading

from app_helpers import isolated, make_app, plain, settle
from tui.app.app import CtxpaneApp
from waiting import eventually

SIZE = (160, 48)


async def test_the_first_frame_says_loading_and_has_no_controller_yet(monkeypatch, tmp_path):
    isolated(monkeypatch, tmp_path)
    release = threading.Event()
    build = CtxpaneApp._build_controller

    def held(self):  # the thread's build waits until the test has looked at the first frame
        if threading.current_thread() is not threading.main_thread():
            release.wait(30)
        return build(self)
    monkeypatch.setattr(CtxpaneApp, "_build_controller", held)
    app = make_app(tmp_path, offline=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert app._controller is None
        assert plain(app.screen.query_one("#summary")).strip() == "loading…"
        release.set()
        await settle(pilot, app)
        assert app._controller is not None and "loading" not in plain(app.screen.query_one("#summary"))


async def test_keys_typed_before_the_controller_exists_reach_the_pane(monkeypatch, tmp_path):
    isolated(monkeypatch, tmp_path)
    monkeypatch.setattr(CtxpaneApp, "_build_in_background", lambda self: None)  # nothing built after the frame
    app = make_app(tmp_path, offline=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert app._controller is None
        await pilot.press(*"typed early")  # the first key builds the controller on the spot
        assert app._controller is not None
        CtxpaneApp._open_after_first_frame(app)  # then start-up goes on, as the thread would have started it
        await settle(pilot, app)
        assert app.wb.draft == "typed early"
        await eventually(lambda: "typed early" in app.wb.view.document.text, 10, "the draft in the document",
                         pilot=pilot)
