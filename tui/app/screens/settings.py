"""The settings screen: window, reply room, truncation policy, sampling parameters, endpoint.

It shows the controller's values as texts and hands the edited form back to the controller
(`apply`), which checks every field; wrong fields get their one-line error under them and the
screen stays open. Only the key's variable name is shown, never the key.
"""

from __future__ import annotations

from typing import Callable

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Select, Static

from tui.context.policy.truncation import POLICIES
from tui.controller.tuning import FIELDS

from tui.app.safe_inputs import KeysBeforeFocus, SafeInput
from tui.app.shown import shown_line


class SettingsScreen(KeysBeforeFocus, ModalScreen[bool]):
    """Dismissed with True once the settings were applied, False on cancel."""

    DEFAULT_CSS = """
    SettingsScreen { align: center middle; }
    SettingsScreen > Vertical { width: 90; max-width: 98%; height: 90%; border: thick $primary;
                                background: $surface; padding: 0 1; }
    SettingsScreen VerticalScroll { height: 1fr; }
    SettingsScreen .row { height: auto; }
    SettingsScreen .row Label { width: 22; padding: 0 1 0 0; }
    SettingsScreen .row Input { width: 1fr; height: 1; border: none; padding: 0 1; background: $boost; }
    SettingsScreen .row Input:focus { background: $primary 30%; }
    SettingsScreen .row Select { width: 1fr; }
    SettingsScreen .choice Label { padding: 1 1 0 0; }
    SettingsScreen .hint { color: $text-muted; padding-left: 22; height: auto; }
    SettingsScreen .error { color: $error; padding-left: 22; height: auto; }
    SettingsScreen #buttons { height: auto; align-horizontal: right; }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel"), Binding("ctrl+s", "save", "Apply"),
                Binding("ctrl+r", "reconnect", "Reconnect")]
    AUTO_FOCUS = "#field-context_window"  # focused as the screen is composed: the keys typed behind F8 land there

    def __init__(self, values: dict[str, str], apply: Callable[[dict[str, str]], dict[str, str]],
                 reconnect: Callable[[], None]) -> None:
        super().__init__()
        self.values, self.apply, self.reconnect = values, apply, reconnect

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("Settings (saved with the session; Ctrl+S applies, Esc cancels)")
            with VerticalScroll():
                for field in FIELDS:
                    with Horizontal(classes="row choice" if field.key == "name" else "row"):
                        yield Label(field.label)
                        yield self._editor(field.key)
                    if field.hint:
                        yield Static(shown_line(field.hint), classes="hint")
                    yield Static("", id=f"error-{field.key}", classes="error")
            yield Static("", id="error-", classes="error")
            with Horizontal(id="buttons"):
                yield Button("Reconnect (ctrl+r)", id="reconnect")
                yield Button("Cancel", id="cancel")
                yield Button("Apply (ctrl+s)", id="save", variant="primary")

    def _editor(self, key: str):
        value = self.values.get(key, "")
        if key == "name":
            return Select([(name, name) for name in POLICIES], value=value if value in POLICIES else POLICIES[0],
                          allow_blank=False, id=f"field-{key}")
        return SafeInput(value, id=f"field-{key}", submit_now=self.action_save)

    def on_mount(self) -> None:
        # (no focus() here: AUTO_FOCUS has focused the first field; a focus() lands a refresh later and took the
        # focus back from the field a Tab held since F8 had moved it to)
        for error in self.query(".error"):
            error.display = False

    def form(self) -> dict[str, str]:
        texts: dict[str, str] = {}
        for field in FIELDS:
            editor = self.query_one(f"#field-{field.key}")
            texts[field.key] = str(editor.value) if isinstance(editor, Select) else editor.value
        return texts

    def show_errors(self, errors: dict[str, str]) -> None:
        for error in self.query(".error"):
            text = errors.get((error.id or "").removeprefix("error-"), "")
            error.update(shown_line(text))
            error.display = bool(text)
        first = next((key for key in (f.key for f in FIELDS) if key in errors), None)
        if first is not None:
            self.query_one(f"#field-{first}").focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        actions = {"save": self.action_save, "cancel": self.action_cancel, "reconnect": self.action_reconnect}
        actions[event.button.id or "cancel"]()

    def action_save(self) -> None:
        errors = self.apply(self.form())
        if errors:
            self.show_errors(errors)
        else:
            self.dismiss(True)

    def action_reconnect(self) -> None:
        self.reconnect()
        self.dismiss(False)

    def action_cancel(self) -> None:
        self.dismiss(False)
