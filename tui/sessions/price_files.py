"""The price table in use: the one shipped with ctxpane, with the user's prices.toml over it.

The user's file lives in ctxpane's config folder ($XDG_CONFIG_HOME/ctxpane/prices.toml, found the
way the app finds config.toml). It is read like any file from outside (a regular file, bounded, never
waited on); a file that cannot be used leaves the shipped table in force and gives one line saying why.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from platformdirs import user_config_dir

from tui.context.pricing.prices import PriceTable, PriceTableError, parse_price_table
from tui.context.untrusted.visible import visible

from tui.sessions.safe_io import SessionFileError, read_regular_file

FILE_NAME = "prices.toml"
READ_LIMIT = 1024 * 1024  # what is read at all; the table's own bound (MAX_BYTES) is checked on the bytes


def user_prices_path() -> Path:
    return Path(user_config_dir("ctxpane", appauthor=False)) / FILE_NAME


def shipped_prices() -> PriceTable:
    return parse_price_table(resources.files("tui.context.pricing").joinpath(FILE_NAME).read_bytes(), "shipped")


def read_prices(path: Path) -> PriceTable:
    """A price table file; raises PriceTableError (one line) for anything unusable."""
    try:
        raw = read_regular_file(path, READ_LIMIT)
    except SessionFileError as exc:
        raise PriceTableError(visible(str(exc))) from None
    return parse_price_table(raw, visible(str(path)))


def load_prices(path: Path | None = None) -> tuple[PriceTable, list[str]]:
    """The shipped table with the user's file (or `path`) over it, and the problems met (one line each).

    A missing user file is no problem: the shipped table is used as it is.
    """
    table = shipped_prices()
    chosen = path or user_prices_path()
    if path is None and not chosen.exists():
        return table, []
    try:
        return table.merged(read_prices(chosen)), []
    except PriceTableError as exc:
        return table, [f"{exc}; using the shipped prices"]
