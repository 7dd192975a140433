"""A modal editor for a message, the system prompt, or a pasted document."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, TextArea

from tui.app.safe_inputs import KeysBeforeFocus, SafeInput, SafeTextArea
from tui.app.shown import shown_line


class EditScreen(KeysBeforeFocus, ModalScreen[tuple[str, str] | None]):
    """Returns (text, label) on save, None on cancel; (text, label, key) when a key was asked for. The label and
    key lines show only when asked for."""

    DEFAULT_CSS = """
    EditScreen { align: center middle; }
    EditScreen > Vertical { width: 100; max-width: 95%; height: 80%; border: thick $primary; background: $surface; padding: 1; }
    EditScreen TextArea { height: 1fr; }
    EditScreen Horizontal { height: auto; align-horizontal: right; }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel"), Binding("ctrl+s", "save", "Save")]
    AUTO_FOCUS = "#editor"  # focused as the dialog is composed: the keys typed behind Ctrl+E land there

    def __init__(self, title: str, text: str = "", label: str | None = None, key: str | None = None) -> None:
        super().__init__()
        self.title_text, self.text, self.label, self.key = title, text, label, key

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(shown_line(self.title_text, limit=400))
            if self.label is not None:
                yield SafeInput(self.label, placeholder="source label, e.g. file:report.pdf", id="label")
            if self.key is not None:
                yield SafeInput(self.key, placeholder="supersede key (optional): a later item with this key replaces "
                                                      "this one under the curated policy", id="key")
            yield SafeTextArea(self.text, id="editor", soft_wrap=True)
            with Horizontal():
                yield Button("Cancel", id="cancel")
                yield Button("Save (ctrl+s)", id="save", variant="primary")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.action_save() if event.button.id == "save" else self.action_cancel()

    def action_save(self) -> None:
        label = self.query_one("#label", Input).value if self.label is not None else ""
        text = self.query_one("#editor", TextArea).text
        self.dismiss((text, label, self.query_one("#key", Input).value) if self.key is not None else (text, label))

    def action_cancel(self) -> None:
        self.dismiss(None)
