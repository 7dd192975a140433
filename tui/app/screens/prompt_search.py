"""Ctrl+R: search what was sent, in this session and every other; Enter puts the prompt in the composer."""

from __future__ import annotations

from typing import Callable

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, OptionList
from textual.widgets.option_list import Option

from tui.app.safe_inputs import SafeInput
from tui.app.shown import shown_line

SHOWN = 100  # prompts listed at once (the search narrows them)


class PromptSearchScreen(ModalScreen[str | None]):
    DEFAULT_CSS = """
    PromptSearchScreen { align: center middle; }
    PromptSearchScreen > Vertical { width: 100; max-width: 95%; height: 80%; border: thick $primary;
                                    background: $surface; padding: 1; }
    PromptSearchScreen OptionList { height: 1fr; }
    """
    BINDINGS = [Binding("escape", "cancel", "Close"), Binding("down", "to_list", show=False)]

    def __init__(self, search: Callable[[str], list[str]]) -> None:
        super().__init__()
        self.search = search
        self.found: list[str] = []

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(shown_line("Prompt history: this session's first, then the others' (enter: to the composer "
                                   "· ↓ to the list · esc close)", limit=300))
            yield SafeInput(placeholder="search what you sent", id="prompt-search")
            yield OptionList(id="prompts")

    def on_mount(self) -> None:
        self.show_found("")
        self.query_one(Input).focus()

    def show_found(self, query: str) -> None:
        self.found = self.search(query)[:SHOWN]
        options = self.query_one(OptionList)
        options.clear_options()
        options.add_options([Option(shown_line(text, limit=200)) for text in self.found])
        if self.found:
            options.highlighted = 0

    def on_input_changed(self, event: Input.Changed) -> None:
        self.show_found(event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if self.found:
            self.dismiss(self.found[self.query_one(OptionList).highlighted or 0])

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(self.found[event.option_index])

    def action_to_list(self) -> None:
        self.query_one(OptionList).focus()

    def action_cancel(self) -> None:
        self.dismiss(None)
