"""The command palette's entries: every action, what Undo and Redo would do, each branch that can be shown.

Titles carry outside text (file names, a branch's first words, theme names): each is one line and escaped,
never read as markup.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from textual.app import SystemCommand
from textual.markup import escape

from tui.app.actions import ACTIONS, BY_ID
from tui.app.shown import one_line

if TYPE_CHECKING:
    from tui.app.app import CtxpaneApp


# Undo and Redo come first, titled with what they would do; Help is last, as the palette's way out.
_LEADING, _TRAILING = ("undo", "redo"), ("help",)


def palette_commands(app: "CtxpaneApp") -> Iterable[SystemCommand]:
    table = [action for action in ACTIONS if action.id not in (*_LEADING, *_TRAILING, "quit")]
    commands = [(action.title, action.help, getattr(app, f"action_{action.id}")) for action in table]
    commands += [(BY_ID[id].title, BY_ID[id].help, getattr(app, f"action_{id}")) for id in _TRAILING]
    history = app.controller.history
    if history.redo_label:
        commands.insert(0, (f"Redo {history.redo_label}", BY_ID["redo"].help, app.action_redo))
    if history.next_label:
        commands.insert(0, (f"Undo {history.next_label}", BY_ID["undo"].help, app.action_undo))
    for index, (place, branch) in enumerate(app.controller.branches()):
        first = branch.messages[0].text()[:40] if branch.messages else ""
        commands.append((f"Show branch at #{place}: {first}", f"{len(branch.messages)} messages, kept "
                         f"{branch.label}; the one shown now is kept in turn", _shows_branch(app, index)))
    for name in app.pane_themes:
        commands.append((f"Theme: {name}", "switch the theme", lambda n=name: setattr(app, "theme", n)))
    for title, help_text, callback in commands:
        if app.check_action(getattr(callback, "__name__", "").removeprefix("action_"), ()):
            # labels carry outside text (file names, a branch's first words): one line, never markup
            yield SystemCommand(escape(one_line(title, 200)), escape(one_line(help_text, 400)), callback)


def _shows_branch(app: "CtxpaneApp", index: int):
    """The callback for one branch, named as the action so a replay (check_action) leaves it out."""
    def action_show_branch() -> None:
        app.action_show_branch(index)
    return action_show_branch
