"""The composer's line, sent or run: `//…` sends a `/…` line, `/name …` runs a command (tui/controller/slash.py),
anything else is a message. Commands that open a dialog or a screen are opened here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tui.controller.slash import Outcome, Slash, message_of, parse

if TYPE_CHECKING:
    from tui.app.app import CtxpaneApp


def take_line(app: "CtxpaneApp", text: str) -> bool:
    """Send or run the composer's line. True when it was taken (the composer lets it go)."""
    message = message_of(text)
    if message is not None:
        return app.controller.submit(message)
    parsed = parse(text)
    if parsed.kind is not None and app.replaying:
        return False
    outcome = app.controller.slash.run(parsed)
    if outcome is not Outcome.FOR_APP:
        return outcome is Outcome.DONE  # a refused line stays in the composer, to be corrected
    opens = {Slash.MODEL: app.action_pick_model, Slash.TEMPLATE: app.action_pick_template,
             Slash.SYSTEM: app.action_edit_system, Slash.CONTEXT: lambda: show_context(app),
             Slash.HELP: app.action_help}
    opens[parsed.kind]()
    return True


def show_context(app: "CtxpaneApp") -> None:
    from tui.context.context_grid import context_grid

    from tui.app.screens.context_grid import ContextScreen
    pane = app.controller.pane_state()
    if pane is None:
        app.notify("nothing computed yet: the window's use is shown once the conversation is", severity="warning",
                   markup=False)
        return
    grid = context_grid(pane.view, context_window(app, pane), pane.policy.max_tokens)
    app.push_screen(ContextScreen(grid, pane.view.snapshot.counts.exact, app.roles))


def context_window(app: "CtxpaneApp", pane) -> int | None:
    """The window the grid is drawn against: the policy's, else the server's (the one its warnings use)."""
    if pane.policy.context_window:
        return pane.policy.context_window
    from tui.controller.receiving import server_window
    window, _kind = server_window(app.controller.parts)
    return window.tokens if window is not None else None
