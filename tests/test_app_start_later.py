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


async def test_quitting_while_the_controller_is_built_starts_nothing_after(monkeypatch, tmp_path):
    """Found by a review: the quit closed the controller the thread was building, and the thread then started
    start-up (the session opened, the link connected) on it."""
    import time

    import tui.controller.controller as controller_module
    isolated(monkeypatch, tmp_path)
    order: list[str] = []
    init, close, start_up = (controller_module.Controller.__init__, controller_module.Controller.close,
                             CtxpaneApp._start_up)

    def slow_init(self, *args, **kwargs):  # a slow machine: the build takes a while
        if threading.current_thread() is not threading.main_thread():
            time.sleep(1.0)
        init(self, *args, **kwargs)

    async def starting(self):
        order.append("start-up")
        return await start_up(self)
    monkeypatch.setattr(controller_module.Controller, "__init__", slow_init)
    monkeypatch.setattr(controller_module.Controller, "close", lambda self: (order.append("closed"), close(self)))
    monkeypatch.setattr(CtxpaneApp, "_start_up", starting)
    app = make_app(tmp_path, offline=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert app._controller is None  # still building: the user quits now
    import asyncio
    await asyncio.sleep(2)  # the test's loop goes on: a start-up handed to it from the thread would run now
    assert order == ["closed"]  # the build under way ended, was closed, and nothing started on it


async def test_a_controller_that_cannot_be_built_ends_the_app_with_one_line(monkeypatch, tmp_path):
    """Found by a review: the thread died, its traceback under the screen, and the pane said loading… for ever."""
    import tui.controller.controller as controller_module
    isolated(monkeypatch, tmp_path)

    def broken(self, *args, **kwargs):
        raise OSError("the sessions folder is not writable")
    monkeypatch.setattr(controller_module.Controller, "__init__", broken)
    app = make_app(tmp_path, offline=True)
    async with app.run_test(size=SIZE) as pilot:
        await eventually(lambda: not app.is_running, 10, "the app to end", pilot=pilot)
    assert app.build_failure == "could not start: OSError: the sessions folder is not writable"
    assert app.return_code == 1 and app.save_failure is None and app.session_file is None


def test_the_command_says_why_it_could_not_start(monkeypatch, tmp_path):
    import subprocess
    import sys

    from conftest import ROOT
    env = {"XDG_DATA_HOME": str(tmp_path / "d"), "XDG_CONFIG_HOME": str(tmp_path / "c"), "PATH": "/usr/bin:/bin",
           "PYTHONPATH": str(ROOT), "TERM": "xterm-256color"}
    code = ("import tui.controller.controller as c\n"
            "def broken(self, *a, **k): raise OSError('no room \\x1b[31m left')\n"
            "c.Controller.__init__ = broken\n"
            "from tui.cli import entry\nimport sys\nsys.argv = ['ctxpane', '--no-scan']\nentry()\n")
    done = subprocess.run(["script", "-qec", f"{sys.executable} -c \"{code}\"", "/dev/null"], capture_output=True,
                          text=True, env=env, timeout=60, cwd=ROOT)
    assert "ctxpane: could not start: OSError: no room ␛[31m left" in done.stdout
