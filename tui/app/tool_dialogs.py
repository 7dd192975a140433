"""The app's side of tools in the chat: the tool file asked for, and the dialog for each waiting call (opened
when a reply ends with calls, again from the palette), its choice handed to the controller, which gates it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from textual.screen import ModalScreen

from tui.app.screens.tool_call import ToolCallScreen, ToolChoice

if TYPE_CHECKING:
    from tui.app.app import CtxpaneApp
    from tui.context.tools.calls import PendingCall


class ToolDialogs:
    def __init__(self, app: CtxpaneApp) -> None:
        self.app = app

    @property
    def tools(self):
        return self.app.controller.tool_calls

    def load(self) -> None:
        from tui.app.screens.edit import EditScreen

        def done(result) -> None:
            if result is not None and result[0].strip():
                self.tools.load(Path(result[0].strip()).expanduser())
        self.app.push_screen(EditScreen("Tool file to load (a path: a JSON list of tools, `risky` and `command` "
                                        "optional)", ""), done)

    def waiting(self) -> None:
        """Calls wait (a reply ended with them, a review ended, one was answered): show the first one."""
        screen = self.app.screen
        if isinstance(screen, ToolCallScreen):
            if screen.call in self.tools.pending():
                screen.show_facts()
                return
            screen.dismiss(None)
        self.open()

    def open(self, asked: bool = False) -> None:
        waiting = self.tools.pending()
        if not waiting:
            if asked:
                self.app.notify("no tool call waits for an answer", markup=False)
            return
        if isinstance(self.app.screen, ModalScreen):  # another dialog is open: the palette brings the call back
            return
        call = waiting[0]
        self.app.push_screen(ToolCallScreen(lambda: self.tools.facts(call)), lambda result: self._chosen(call, result))

    def _chosen(self, call: PendingCall, result: tuple[ToolChoice, str] | None) -> None:
        if result is None:
            return
        choice, text = result
        match choice:
            case ToolChoice.ANSWER if not text.strip():
                self.app.notify("type the answer first (or refuse the call)", severity="warning", markup=False)
                self.app.call_later(self.open)
            case ToolChoice.ANSWER:
                self.tools.answer(call, text)
            case ToolChoice.RUN:
                self.tools.run(call)
            case ToolChoice.OVERRIDE:
                self._override(call)
            case ToolChoice.REFUSE:
                self.tools.refuse(call)

    def _override(self, call: PendingCall) -> None:
        from tui.app.screens.confirm import ConfirmScreen

        def done(sure: bool | None) -> None:
            if sure:
                self.tools.run(call, override=True)
            else:
                self.app.call_later(self.open)
        self.app.push_screen(ConfirmScreen(f"The reviewer denied {call.name}. Run its command anyway?"), done)
