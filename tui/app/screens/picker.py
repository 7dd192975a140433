"""Pick one of a list (model, template, tokenizer, policy, theme, session)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from tui.app.safe_inputs import KeysBeforeFocus
from tui.app.shown import shown_line


class PickerScreen(KeysBeforeFocus, ModalScreen[str | None]):
    DEFAULT_CSS = """
    PickerScreen { align: center middle; }
    PickerScreen > Vertical { width: 80; max-width: 95%; height: auto; max-height: 80%; border: thick $primary; background: $surface; padding: 1; }
    PickerScreen OptionList { height: auto; max-height: 30; }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    AUTO_FOCUS = "OptionList"  # focused as the list is composed: the keys typed behind F3 reach it

    def __init__(self, title: str, options: list[tuple[str, str]], current: str | None = None) -> None:
        super().__init__()
        self.title_text, self.options, self.current = title, options, current

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(shown_line(self.title_text, limit=400))
            yield OptionList(*[Option(shown_line(("● " if value == self.current else "  ") + label), id=value)
                               for value, label in self.options], id="options")

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)
