"""Files shipped beside the code: inside the installed package, or at the top of a source checkout."""

from __future__ import annotations

from importlib import resources
from importlib.abc import Traversable
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parent.parent


def shipped_folder(package: str, checkout_folder: str) -> Traversable:
    """`tui.themes` when installed; `themes/` of the checkout when running from source."""
    try:
        return resources.files(package)
    except ModuleNotFoundError:
        return CHECKOUT / checkout_folder
