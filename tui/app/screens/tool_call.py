"""The dialog for one tool call the model made: what it asks, the command that would run (before it runs),
the isolated reviewer's verdict beside it, and the three answers: by hand, run the command, or refuse. A deny
offers the explicit override, and only then. Every text here came from outside: shown, never parsed."""

from __future__ import annotations

import json
import shlex
from enum import StrEnum
from typing import Callable

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static, TextArea

from tui.app.actions import RUN_TOOL_KEY
from tui.app.safe_inputs import KeysBeforeFocus, SafeTextArea, TakesKeysWhenSeen
from tui.app.screens.confirm import ConfirmScreen
from tui.app.shown import shown, shown_line, shown_parts
from tui.context.tools.review import ARGUMENTS_REVIEWED
from tui.controller.tool_calls import CallFacts, ReviewState

ARGUMENTS_SHOWN = ARGUMENTS_REVIEWED  # the reviewer is shown as much, and a longer call is never allowed
RUN_KEY = RUN_TOOL_KEY  # bound nowhere else (actions.py)


class ToolChoice(StrEnum):
    ANSWER = "answer"
    RUN = "run"
    OVERRIDE = "override"
    REFUSE = "refuse"


def pretty(arguments: str) -> str:
    """The arguments indented when they are JSON; cut, and the cut said, past what the reviewer was shown."""
    try:
        text = json.dumps(json.loads(arguments), ensure_ascii=False, indent=2)
    except (ValueError, RecursionError):
        text = arguments
    if len(text) <= ARGUMENTS_SHOWN:
        return text
    return text[:ARGUMENTS_SHOWN] + f"\n…[cut here: {len(text) - ARGUMENTS_SHOWN:,} more characters not shown]"


class ToolCallScreen(TakesKeysWhenSeen, KeysBeforeFocus, ModalScreen[tuple[ToolChoice, str] | None]):
    """Returns (choice, the hand answer) or None (later: the call keeps waiting, the palette brings it back).
    Opened only when the user asks; it takes keys only once it has been seen (TakesKeysWhenSeen)."""

    DEFAULT_CSS = """
    ToolCallScreen { align: center middle; }
    ToolCallScreen > Vertical { width: 100; max-width: 95%; height: auto; max-height: 95%; border: thick $warning;
                                background: $surface; padding: 0 1; }
    ToolCallScreen #arguments { height: auto; min-height: 3; max-height: 14; }
    ToolCallScreen Button { min-width: 0; margin-left: 1; }
    ToolCallScreen #answer { height: 5; }
    ToolCallScreen .facts { height: auto; }
    ToolCallScreen #verdict.-deny { color: $error; }
    ToolCallScreen #verdict.-allow { color: $success; }
    ToolCallScreen Horizontal { height: auto; align-horizontal: right; }
    """
    # Keys no text area takes (it has focus): the answer is typed in one.
    BINDINGS = [Binding("escape", "later", "Later"), Binding("ctrl+s", "answer", "Answer by hand"),
                Binding(RUN_KEY, "choose('run')", "Run command"), Binding("ctrl+g", "choose('override')", "Override"),
                Binding("ctrl+n", "choose('refuse')", "Refuse")]
    AUTO_FOCUS = "#answer"
    SEEN_FOCUS = "#answer"

    def __init__(self, facts: Callable[[], CallFacts]) -> None:
        super().__init__()
        self.facts = facts
        self.call = facts().call

    def compose(self) -> ComposeResult:
        facts = self.facts()
        with Vertical(id="body"):
            yield Static(shown_line(f"Tool call {facts.place} of {facts.waiting}: {facts.call.name or 'unnamed'}",
                                    style="bold"), classes="facts")
            yield Static(shown_line(facts.standing), id="standing", classes="facts")
            yield Static(id="command", classes="facts")
            yield Static(id="verdict", classes="facts")
            yield Static(id="blocked", classes="facts")
            yield SafeTextArea(pretty(facts.call.arguments), id="arguments", read_only=True, soft_wrap=True)
            yield Static(shown_line("Answer by hand (sent back as an untrusted tool result):"), classes="facts")
            yield SafeTextArea("", id="answer", soft_wrap=True)
            with Horizontal():
                yield Button("Later esc", id="later")
                yield Button("Refuse ^n", id="refuse", variant="warning")
                yield Button("Override the deny ^g", id="override", variant="error")
                yield Button(f"Run command {RUN_KEY.upper()}", id="run", variant="success")
                yield Button("Answer by hand ^s", id="answer-button", variant="primary")

    def on_mount(self) -> None:
        self.show_facts()

    def show_facts(self) -> None:
        """Drawn again when the review ends (the app calls this on ToolCallsWaiting)."""
        facts = self.facts()
        command = (shown_parts(("command: ", "bold"), shlex.join(facts.command), ("  (the arguments on stdin; "
                                                                                  "no shell)", "dim"))
                   if facts.command else shown_line("no command set for this tool: answer by hand or refuse", "dim"))
        self.query_one("#command", Static).update(command)
        verdict = self.query_one("#verdict", Static)
        if facts.review:
            verdict.update(shown(f"reviewer ({facts.reviewer}): {facts.review}"
                                 + (f"\n{facts.rationale}" if facts.rationale else ""),
                                 limit=1200))
        else:
            verdict.update(shown_line("no review (the tool is not marked risky)", "dim"))
        ended = facts.review_state not in (None, ReviewState.REVIEWING)
        verdict.set_class(ended and not facts.allowed, "-deny")
        verdict.set_class(facts.allowed, "-allow")
        run = self.query_one("#run", Button)
        run.disabled = bool(facts.run_blocked)
        run.tooltip = shown_line(facts.run_blocked) if facts.run_blocked else None  # (a string would be markup)
        self.query_one("#blocked", Static).update(shown_line(f"Run is off: {facts.run_blocked}", "italic")
                                                  if facts.run_blocked else "")
        self.query_one("#override", Button).display = facts.override_helps

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_choose(event.button.id or "")

    def action_choose(self, choice: str) -> None:
        """A key does what its button does, and nothing when the button is off (Run on a deny)."""
        if choice == "later":
            self.dismiss(None)
        elif choice in ("run", "override", "refuse"):
            button = self.query_one(f"#{choice}", Button)
            if not button.disabled and button.display:
                self.dismiss((ToolChoice(choice), ""))
        else:
            self.action_answer()

    def action_answer(self) -> None:
        self.dismiss((ToolChoice.ANSWER, self.query_one("#answer", TextArea).text))

    def action_later(self) -> None:
        self.dismiss(None)


class OverrideConfirm(TakesKeysWhenSeen, ConfirmScreen):
    """The explicit override of a deny: its Yes runs the command, so it too takes keys only once it has been seen
    (a `y` typed behind the override's key is not the user's answer to a question not read yet)."""

    SEEN_BODY = "ConfirmScreen > Vertical"
    SEEN_FOCUS = "#no"
