"""The session's state and its transitions, below the app: plain Python, no UI toolkit (tests/test_layers.py)."""

from tui.controller.controller import Controller
from tui.controller.runtime import AsyncioRuntime, Runtime

__all__ = ["AsyncioRuntime", "Controller", "Runtime"]
