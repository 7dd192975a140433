"""Theme files (TOML data, never code): Textual's colours plus the context pane's role colours."""

from __future__ import annotations

import re

from dataclasses import dataclass, field
from pathlib import Path

from textual.color import Color, ColorParseError
from textual.theme import Theme

from tui.context.untrusted.outside_files import FileProblem, parse_toml, read_bounded
from tui.shipped import shipped_folder

COLOR_KEYS = ("primary", "secondary", "accent", "foreground", "background", "surface", "panel", "warning",
              "error", "success")
ROLE_KEYS = ("system", "developer", "user", "assistant", "tool", "marker", "fence", "dropped", "cache", "forged",
             "draft")
DEFAULT_ROLES = {"system": "magenta", "developer": "magenta", "user": "green", "assistant": "cyan",
                 "tool": "yellow", "marker": "grey50", "fence": "dark_orange", "dropped": "grey39",
                 "cache": "dark_cyan", "forged": "red", "draft": "green_yellow"}
DEFAULT_THEME = "ctxpane-dark"
MAX_THEME_BYTES = 64 * 1024  # a theme is a few dozen lines
MAX_THEME_FILES = 100  # theme files read from the user's folder


class ThemeFileError(ValueError):
    """A theme file that cannot be used; it is skipped and the reason shown."""


@dataclass
class PaneTheme:
    theme: Theme
    roles: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_ROLES))
    origin: str = ""


def _color(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise ThemeFileError(f"{where}: a colour must be a string like \"#336699\"")
    try:
        return Color.parse(value).hex
    except ColorParseError:
        raise ThemeFileError(f"{where}: {value!r} is not a colour") from None


def parse_theme(text: str | bytes, origin: str) -> PaneTheme:
    try:
        data = parse_toml(text, origin, MAX_THEME_BYTES)
    except FileProblem as exc:
        raise ThemeFileError(str(exc)) from None
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ThemeFileError(f"{origin}: a theme needs a name")
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9 _.-]{0,63}", name):  # shown in the palette and settings
        raise ThemeFileError(f"{origin}: a theme name may have letters, digits, space, '_', '.', '-' (64 at most)")
    colors, role_colors = data.get("colors", {}), data.get("roles", {})
    if not isinstance(colors, dict) or not isinstance(role_colors, dict):
        raise ThemeFileError(f"{origin}: [colors] and [roles] must be tables")
    if "primary" not in colors:
        raise ThemeFileError(f"{origin}: [colors] needs at least 'primary'")
    unknown = set(colors) - set(COLOR_KEYS)
    if unknown:
        raise ThemeFileError(f"{origin}: unknown colours {', '.join(sorted(unknown))}")
    theme = Theme(name=name, dark=bool(data.get("dark", True)),
                  **{key: _color(value, f"{origin} [colors].{key}") for key, value in colors.items()})
    roles = dict(DEFAULT_ROLES)
    for key, value in role_colors.items():
        if key not in ROLE_KEYS:
            raise ThemeFileError(f"{origin}: unknown role colour {key!r}")
        roles[key] = _color(value, f"{origin} [roles].{key}")
    return PaneTheme(theme, roles, origin)


def shipped_theme_texts() -> list[tuple[str, str]]:
    folder = shipped_folder("tui.themes", "themes")
    return sorted((entry.name, entry.read_text(encoding="utf-8")) for entry in folder.iterdir()
                  if entry.name.endswith(".toml"))


def load_themes(user_folder: Path | None) -> tuple[dict[str, PaneTheme], list[str]]:
    """Shipped themes, then the user's (which may replace a shipped one by name); plus errors to show."""
    themes: dict[str, PaneTheme] = {}
    errors: list[str] = []
    sources = [(f"themes/{name}", text) for name, text in shipped_theme_texts()]
    if user_folder is not None and user_folder.is_dir():
        found = sorted(user_folder.glob("*.toml"))
        if len(found) > MAX_THEME_FILES:
            errors.append(f"{user_folder}: {len(found):,} theme files, only the first {MAX_THEME_FILES} are read")
        for path in found[:MAX_THEME_FILES]:
            try:
                sources.append((str(path), read_bounded(path, MAX_THEME_BYTES)))
            except FileProblem as exc:  # a FIFO is refused, not waited on
                errors.append(str(exc))
    for origin, text in sources:
        try:
            pane_theme = parse_theme(text, origin)
            themes[pane_theme.theme.name] = pane_theme
        except ThemeFileError as exc:
            errors.append(str(exc))
    return themes, errors
