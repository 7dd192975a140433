"""The app's part around the composer: the prompt history's Up/Down and Ctrl+R, F9, and Tab moving the focus."""

from __future__ import annotations

from textual.widgets import TextArea

from tui.errors import closest

from tui.app.chat.composer import Composer
from tui.app.shown import one_line
from tui.app.themes import DEFAULT_THEME


def unknown_theme_line(name: str, themes) -> str:
    close = closest(name, themes)
    hint = f"; did you mean `{close}`?" if close else ""
    return f"theme `{one_line(name, 60)}`: not found{hint} ({DEFAULT_THEME} is used)"


class ComposerActions:
    """Mixed into CtxpaneApp (app.py): its `controller`, `main`, `notify` and `push_screen` are the app's."""

    def on_composer_recall(self, event: Composer.Recall) -> None:
        recall, composer = self.controller.recall, event.composer
        if composer.text not in (event.text, composer.recalled):  # typed since the Up: the keys win
            return
        if composer.text != (composer.recalled or ""):  # emptied by hand: the history starts again from the newest
            recall.reset()
        text = recall.older(composer.text) if event.older else recall.newer()
        if text is not None:
            composer.show_recalled(text)

    def action_retry(self) -> None:
        """Ask the last question again; the old reply is kept as a branch (/retry)."""
        self.controller.slash.retry()

    def action_summarise_now(self) -> None:
        """Switch to the summarise policy and make the summary now (/summarise)."""
        self.controller.slash.summarise()

    def action_context_grid(self) -> None:
        """What fills the window (/context)."""
        from tui.app.slash_commands import show_context
        show_context(self)

    def action_continue_in_new_session(self) -> None:
        self.controller.continue_in_new_session()

    def action_rename_session(self) -> None:
        self.dialogs.rename_session()

    def action_fit_and_send(self) -> None:
        """After an over-the-window warning: drop the oldest turns to fit, and send what the composer holds."""
        from tui.app.slash_commands import message_of
        composer = self.main(Composer)
        text = composer.text
        message = message_of(text)
        if message is None:
            self.notify("F9 sends a message: this line is a /command (// sends a line starting with /)",
                        severity="warning", markup=False)
            return
        refused = self.controller.capabilities.fit_and_send(message)
        if refused:
            self.notify(refused, severity="warning", markup=False)
        else:
            composer.take(text)

    def action_search_prompts(self) -> None:
        from tui.app.screens.prompt_search import PromptSearchScreen

        def done(text: str | None) -> None:
            if text is not None:
                self.main(Composer).show_recalled(text)
                self.main(Composer).focus()
        self.push_screen(PromptSearchScreen(self.controller.recall.search), done)

    def _tab_moves_focus(self, forward: bool) -> bool:
        """Not where Tab is the editor's own: indenting, or in the composer, where Tab completes a /command typed
        just before it (still in the composer's queue when the key arrives here: only the composer knows, and it
        moves the focus itself when there is nothing to complete)."""
        widget = self.focused
        if isinstance(widget, TextArea) and widget.tab_behavior == "indent":
            return False
        return not (forward and isinstance(widget, Composer))

    def action_focus_step(self, forward: bool) -> None:
        if forward:
            self.screen.focus_next()
        else:
            self.screen.focus_previous()
