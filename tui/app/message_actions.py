"""What a person does to messages and settings: edit, delete, pin, re-send, attach, pick."""


from __future__ import annotations

from pathlib import Path

from textual import work

from tui.client.errors import ClientError
from tui.context.budget import POLICIES, PolicyError
from tui.context.safety import visible
from tui.context.template_library import builtin_names, builtin_template
from tui.context.tokens import ENCODINGS, HF_TOKENIZERS

from .chat_panel import ChatPanel
from .chat_view import ChatView
from .confirm_screen import ConfirmScreen
from .context_pane import ContextPane
from .edit_screen import EditScreen
from .help_screen import HelpScreen
from .picker_screen import PickerScreen



class MessageActionsMixin:
    """Methods of CtxpaneApp, kept in their own file."""

    # -- message actions ----------------------------------------------------------------------------
    def _focused(self) -> int | None:
        return self.query_one(ChatPanel).focused_index()

    def _changed(self) -> None:
        self.refresh_all()
        self.autosave()

    def action_edit_message(self) -> None:
        index = self._focused()
        if index is None:
            return
        message = self.wb.session.messages[index]

        def done(result) -> None:
            if result is not None:
                self.wb.edit(index, result[0])
                self._changed()
        self.push_screen(EditScreen(f"Edit {message.role} message #{index}", message.text()), done)

    def action_delete_message(self) -> None:
        index = self._focused()
        if index is None:
            return

        def done(yes: bool) -> None:
            if yes:
                self.wb.delete(index)
                self._changed()
        self.push_screen(ConfirmScreen(f"Delete message #{index}?"), done)

    def action_pin_message(self) -> None:
        index = self._focused()
        if index is not None:
            pinned = self.wb.toggle_pin(index)
            self.notify(f"message #{index} {'pinned' if pinned else 'unpinned'}")
            self._changed()

    def action_resend_from_here(self) -> None:
        index = self._focused()
        if index is None or self.client is None or self._streaming:
            return
        messages = self.wb.session.messages
        while index >= 0 and messages[index].role != "user":
            index -= 1
        if index < 0:
            return
        self.wb.truncate_after(index)
        self._changed()
        self._streaming = True
        self.prepare_and_send()

    def action_edit_system(self) -> None:
        messages = self.wb.session.messages
        current = messages[0].text() if messages and messages[0].role == "system" else ""

        def done(result) -> None:
            if result is not None:
                self.wb.set_system_prompt(result[0])
                self._changed()
        self.push_screen(EditScreen("System prompt", current), done)

    def action_attach(self) -> None:
        def done(result) -> None:
            if result is None or not result[0].strip():
                return
            text, label = result
            path = Path(label.removeprefix("file:")).expanduser() if label.startswith("file:") else None
            if path is not None and not text.strip("\n") and path.is_file():
                try:
                    text = path.read_text(encoding="utf-8", errors="replace")
                except OSError as exc:
                    self.notify(f"cannot read {path}: {exc}", severity="error")
                    return
            self.wb.add_document(text, label or "document")
            self._changed()
        self.push_screen(EditScreen("Paste a document (sent fenced, as untrusted data)", "", "file:pasted.txt"), done)

    # -- pickers ------------------------------------------------------------------------------------
    def action_pick_template(self) -> None:
        options = [(name, name) for name in builtin_names()]
        if self.connection and self.connection.template:
            options.insert(0, ("@server", f"the server's own ({self.connection.info.kind})"))

        def done(choice: str | None) -> None:
            if choice is None:
                return
            template = self.connection.template if choice == "@server" else builtin_template(choice)
            self.wb.set_template(template)
            self._changed()
        self.push_screen(PickerScreen("Chat template", options, self.wb.template.name), done)

    def action_pick_tokenizer(self) -> None:
        options = [(name, name) for name in [*ENCODINGS, *HF_TOKENIZERS]]

        def done(choice: str | None) -> None:
            if choice is not None:
                self.load_tokenizer(choice)
        self.push_screen(PickerScreen("Tokenizer", options, self.wb.tokenizer.name), done)

    def action_pick_policy(self) -> None:
        def done(choice: str | None) -> None:
            if choice is None:
                return
            try:
                self.wb.set_policy(name=choice)
            except PolicyError as exc:
                self.notify(str(exc), severity="error")
                return
            self._changed()
        self.push_screen(PickerScreen("Truncation policy", [(p, p) for p in POLICIES], self.wb.policy.name), done)

    @work(exclusive=True, group="models")
    async def action_pick_model(self) -> None:
        if self.client is None:
            self.notify("offline: no server to list models from", severity="warning")
            return
        try:
            models = await self.client.list_models()
        except ClientError as exc:
            self.notify(visible(str(exc)), severity="error")
            return

        def done(choice: str | None) -> None:
            if choice:
                self.client.endpoint.model = self.wb.session.model = choice
                self._changed()
        self.push_screen(PickerScreen("Model", [(m, m) for m in models], self.wb.session.model), done)

    def action_toggle_fences(self) -> None:
        self.wb.session.fences = not self.wb.session.fences
        self.notify(f"fences {'on' if self.wb.session.fences else 'off'}")
        self._changed()

    def action_next_tab(self) -> None:
        self.screen.query_one(ContextPane).next_tab()

    def action_help(self) -> None:
        keymap = self.settings.keys

        def key_of(binding) -> str:
            return keymap.get(binding.id, binding.key_display or binding.key) if binding.id else binding.key
        rows = [(key_of(b), b.description, "app") for b in self.BINDINGS]
        rows += [(key_of(b), b.description, "transcript") for b in ChatView.BINDINGS]
        rows += [("enter", "send the message", "composer"), ("alt+enter / ctrl+j", "new line", "composer"),
                 ("tab / shift+tab", "move between composer, transcript and pane", "everywhere"),
                 ("ctrl+p", "command palette: every action", "everywhere")]
        self.push_screen(HelpScreen(rows))
