"""The session's state and its transitions, below the app: plain Python, no UI toolkit (tests/test_layers.py)."""

from .controller import Controller
from .runtime import AsyncioRuntime, Runtime

__all__ = ["AsyncioRuntime", "Controller", "Runtime"]
