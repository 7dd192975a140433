"""The session's state and its transitions, below the app: plain Python, no UI toolkit (tests/test_layers.py).

Names load on first use, so a widget that imports the snapshot types (tui.controller.snapshot) does not load the
whole controller before the first frame (tests/test_first_frame_imports.py)."""

from importlib import import_module
from typing import Any

_EXPORTS = {"Controller": "controller", "AsyncioRuntime": "runtime", "Runtime": "runtime"}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
