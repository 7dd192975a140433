"""What the app asks or opens before a change: edit a text, confirm, pick one, browse, replay.

Each dialog ends in one controller transition (or in nothing, when the user declines). The message
keys act on the message selected in the transcript, as the chat panel shows it: if the conversation
changed meanwhile, the controller refuses rather than act on another message.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from tui.context.policy.truncation import POLICIES
from tui.context.untrusted.visible import visible
from tui.context.tokens.counting import ENCODINGS, HF_TOKENIZERS, TokenizerNotFound, get_tokenizer
from tui.controller import Controller
from tui.controller.slash import help_lines

from tui.app.actions import help_rows
from tui.app.chat.panel import ChatPanel
from tui.app.chat.transcript import ChatView
from tui.app.chat.composer import Composer
from tui.app.screens.confirm import ConfirmScreen
from tui.app.screens.edit import EditScreen
from tui.app.screens.help import HelpScreen
from tui.app.screens.picker import PickerScreen

if TYPE_CHECKING:
    from tui.app.app import CtxpaneApp


class Dialogs:
    def __init__(self, app: "CtxpaneApp", controller: Controller) -> None:
        self.app, self.controller = app, controller

    def _focused(self):
        return self.app.main(ChatPanel).focused()

    def _after_message_dialog(self, done):
        """`done`; typing goes to the composer again: a letter typed next is text, never a message key.

        The main screen's focus moves to the composer as the dialog opens (the dialog hides it): the screen hands
        it back the moment the dialog closes. Moved after the next refresh, the keys typed right behind Ctrl+S
        (or y) went to the transcript first, where e edits, d deletes and the other letters are lost."""
        self.app.screen_stack[0].set_focus(self.app.main(Composer), scroll_visible=False)
        return done

    # -- messages -----------------------------------------------------------------------------------
    def edit_message(self) -> None:
        focused = self._focused()
        if focused is None or self.controller.answering():  # said now, not after the edit is typed
            return
        index, message = focused

        def done(result) -> None:
            if result is not None:
                self.controller.edit(index, result[0], message)
        later = "; the messages after it stay on the old branch" if index < len(self.app.main(ChatPanel).state.messages) - 1 \
            else ""
        self.app.push_screen(EditScreen(f"Edit {message.role} #{index} (undo: Ctrl+Z in the transcript{later})",
                                        message.text()),
                             self._after_message_dialog(done))

    def delete_message(self) -> None:
        focused = self._focused()
        if focused is None or self.controller.answering():
            return
        index, message = focused

        def done(yes: bool) -> None:
            if yes:
                self.controller.delete(index, message)
        self.app.push_screen(ConfirmScreen(f"Delete {message.role} #{index}? "
                                           "(undo: Ctrl+Z in the transcript, or the palette)"),
                             self._after_message_dialog(done))

    def pin_message(self) -> None:
        focused = self._focused()
        if focused is not None:
            self.controller.toggle_pin(*focused)

    def resend_from_here(self) -> None:
        """Re-send from the user message at or before the selected one; asks first when later messages go."""
        focused = self._focused()
        if focused is None:
            return
        index, message = focused
        messages = self.app.main(ChatPanel).state.messages
        start = next((i for i in range(index, -1, -1) if messages[i].role == "user"), None)
        dropped = len(messages) - start - 1 if start is not None else 0
        if not dropped:
            self.controller.resend_from(index, message)
            return

        def done(yes: bool) -> None:
            if yes:
                self.controller.resend_from(index, message)
        plural = "s" if dropped > 1 else ""
        self.app.push_screen(ConfirmScreen(f"Re-send from user #{start}? The {dropped} later message{plural} "
                                           f"after it will be kept as a branch (palette: Show branch; undo: Ctrl+Z "
                                           f"in the transcript)."),
                             self._after_message_dialog(done))

    def edit_system(self) -> None:
        def done(result) -> None:
            if result is not None:
                self.controller.set_system_prompt(result[0])
        self.app.push_screen(EditScreen("System prompt", self.controller.system_prompt()), done)

    def rename_session(self) -> None:
        def done(result) -> None:
            # (a read-only session's refusal is the controller's notice, naming who holds the file)
            if result is not None and not self.controller.rename_session(result[0]) and not self.controller.read_only:
                self.app.notify("not renamed: the title is empty", severity="warning", markup=False)
        self.app.push_screen(EditScreen("Session title", self.controller.wb.session.title), done)

    def attach(self) -> None:
        if self.controller.answering():  # said now, not after the document is pasted
            return

        def done(result) -> None:
            if result is not None:
                self.controller.attach(*result)
        self.app.push_screen(EditScreen("Paste a document (sent fenced, as untrusted data)", "", "file:pasted.txt",
                                        key=""), done)

    # -- settings -----------------------------------------------------------------------------------
    def pick_template(self) -> None:
        def done(choice: str | None) -> None:
            if choice is not None:
                self.controller.set_template(choice)
        self.app.push_screen(PickerScreen("Chat template", self.controller.template_choices(),
                                          self.controller.wb.template.name), done)

    def pick_tokenizer(self) -> None:
        def done(choice: str | None) -> None:
            if choice is not None:
                self.controller.load_tokenizer(choice)
        self.app.push_screen(PickerScreen("Tokenizer", [(name, name) for name in [*ENCODINGS, *HF_TOKENIZERS]],
                                          self.controller.wb.tokenizer.name), done)

    def pick_policy(self) -> None:
        def done(choice: str | None) -> None:
            if choice is not None:
                self.controller.set_policy(choice)
        self.app.push_screen(PickerScreen("Truncation policy", [(p, p) for p in POLICIES],
                                          self.controller.wb.policy.name), done)

    async def pick_model(self) -> None:
        models = await self.controller.models()
        if models is None:
            return

        def done(choice: str | None) -> None:
            if choice:
                self.controller.set_model(choice)
        self.app.push_screen(PickerScreen("Model", [(m, m) for m in models], self.controller.wb.session.model), done)

    def trust_endpoint(self) -> None:
        """Send the key to the endpoint the session named, after the user says yes."""
        base = self.controller.trust_target()
        if not base:
            self.app.notify("no endpoint to trust: connect with --base-url URL", severity="warning", markup=False)
            return

        def done(yes: bool) -> None:
            if yes:
                self.controller.trust_endpoint(base)
        self.app.push_screen(ConfirmScreen(self.controller.link.trust_question(base)), done)

    # -- sessions -----------------------------------------------------------------------------------
    def open_session(self) -> None:
        from tui.sessions.store import sessions_dir

        from tui.app.screens.sessions import BrowserScreen
        folder = self.app.options.sessions_folder or sessions_dir()
        self.app.push_screen(BrowserScreen(folder, self.controller.file.session_file), self.controller.open_file)

    async def replay(self, start: int = 0) -> None:
        """Step through the session's requests as they were sent (the tokenizer loads off the loop)."""
        from tui.sessions.replay import Replayer, offline_tokenizer_name

        from tui.app.screens.replay import ReplayScreen
        wb = self.controller.wb
        session = wb.session
        if not session.requests:
            self.app.notify("this session has no requests to replay yet", severity="warning", markup=False)
            return
        spec = offline_tokenizer_name(session.tokenizer, wb.template)
        try:
            tokenizer = await asyncio.to_thread(get_tokenizer, spec)
        except TokenizerNotFound as exc:
            self.app.notify(visible(str(exc)), severity="error", markup=False)
            return
        self.app.push_screen(ReplayScreen(session, Replayer(session, wb.template, tokenizer), self.app.roles, start))

    def help(self) -> None:
        keymap = self.app.settings.keys

        def key_of(binding) -> str:
            return keymap.get(binding.id, binding.key_display or binding.key) if binding.id else binding.key
        rows = list(help_rows(keymap))
        rows += [(key_of(b), b.description, "transcript") for b in ChatView.BINDINGS]
        rows += [("enter", "send the message", "composer"), ("alt+enter / ctrl+j", "new line", "composer"),
                 ("tab / shift+tab", "move between composer, transcript and pane", "everywhere"),
                 ("ctrl+p", "command palette: every action", "everywhere")]
        rows += [(line.split(" — ")[0], line.split(" — ", 1)[1], "composer") for line in help_lines()]
        rows += [("tab", "complete a /command", "composer"),
                 ("up / down", "earlier prompts, this session's then others' (in an empty composer)", "composer")]
        self.app.push_screen(HelpScreen(rows))
