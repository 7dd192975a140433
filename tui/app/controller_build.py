"""The app's controller, built in a thread once the first frame is drawn (its import is most of start-up's cost),
and what reaches for it sooner, a quit during the build, or a build that fails. A part of CtxpaneApp (app.py)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from tui.controller import Controller


class BuildsController:
    """The CtxpaneApp's controller, built later (the app gives `_new_controller` and `_open_after_first_frame`)."""

    def _prepare_build(self) -> None:
        self._controller: Controller | None = None
        self._building = threading.Lock()
        self._closing = False  # the app is going away: a controller not built yet never will be
        self.build_failure: str | None = None  # why the controller could not be built (said once the terminal is back)

    @property
    def controller(self) -> Controller:
        """The session's controller. Built in a thread once the first frame is drawn (_build_in_background);
        whatever reaches for it sooner (a key, a test) waits for it or builds it."""
        return self._controller or self._build_controller()

    def _new_controller(self) -> Controller:
        raise NotImplementedError

    def _open_after_first_frame(self) -> None:
        raise NotImplementedError

    def _build_controller(self) -> Controller:
        with self._building:
            if self._controller is None:
                if self._closing:
                    raise RuntimeError("the app is closing: no controller is built")
                self._controller = self._new_controller()
            return self._controller

    def _build_in_background(self) -> None:
        def build() -> None:
            try:
                self._build_controller()
            except Exception as exc:  # noqa: BLE001 - said on the loop, in one line, and the app ends
                if not self._closing:
                    self._on_the_loop(self._build_failed, f"{type(exc).__name__}: {exc}")
                return
            self._on_the_loop(self._open_after_first_frame)
        threading.Thread(target=build, name="build-controller", daemon=True).start()

    def _on_the_loop(self, callback: Callable[..., Any], *args: Any) -> None:
        """From the build thread: run `callback` on the app's loop, unless the app has ended meanwhile."""
        if self._closing:
            return
        try:
            self.call_from_thread(callback, *args)  # type: ignore[attr-defined]  # (the App's)
        except RuntimeError:  # the app is no longer running
            pass

    def _build_failed(self, why: str) -> None:
        self.build_failure = f"could not start: {why}"
        self.exit(return_code=1)  # type: ignore[attr-defined]  # (the App's)

    def _close_controller(self) -> None:
        """The app is unmounted: a build under way ends first and is closed; one not begun never begins."""
        with self._building:
            self._closing = True
            built = self._controller
        if built is not None:
            built.close()
