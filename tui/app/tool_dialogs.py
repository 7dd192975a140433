"""The app's side of tools in the chat: the tool file asked for, and the dialog for each waiting call, its choice
handed to the controller, which gates it.

The dialog opens only when the user asks (its key, or the palette's Answer tool calls): when a reply ends with calls
the user may be typing the next question, and a dialog that took the focus then took the keys in flight too (Ctrl+R
ran the command; the text typed went into Answer by hand). The composer keeps its focus and text; a notice says how
to open the calls."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from textual.screen import ModalScreen

from tui.app.actions import BY_ID
from tui.app.screens.tool_call import OverrideConfirm, ToolCallScreen, ToolChoice
from tui.controller.events import WaitReason

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

    def waiting(self, count: int, reason: WaitReason) -> None:
        """Calls wait (a reply ended with them, a review ended, one was answered): a dialog open shows the news (or
        closes, its call answered meanwhile); none is opened here: a notice says how to open it."""
        screen = self.app.screen
        if isinstance(screen, ToolCallScreen):
            if screen.call in self.tools.pending():
                screen.show_facts()
            else:
                screen.dismiss(None)
            return
        if reason is not WaitReason.REVIEWED:
            self.app.notify(f"{count} tool call(s) wait: {self.open_key()} or palette → Answer tool calls to "
                            "answer, run or refuse", title="Tool calls", severity="warning", timeout=8, markup=False)

    def open_key(self) -> str:
        """The key that opens the dialog, as config.toml's [keys] maps it now."""
        action = BY_ID["answer_tool_calls"]
        return self.app.settings.keys.get(action.id, action.key)

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
        def done(sure: bool | None) -> None:
            if sure:
                self.tools.run(call, override=True)
            else:
                self.app.call_later(self.open)
        self.app.push_screen(OverrideConfirm(f"The reviewer denied {call.name}. Run its command anyway?"), done)
