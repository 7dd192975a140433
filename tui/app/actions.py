"""The app's actions, in one table: the footer, the bindings, F1's list, the palette and the replay's refusals
are all drawn from it, so an action cannot be in one and missing from another.

`id` is both the App's `action_<id>` method and the name `[keys]` in config.toml remaps it by.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from textual.binding import Binding


@dataclass(frozen=True)
class Action:
    id: str
    title: str  # the palette's entry and F1's line
    help: str  # the palette's second line
    key: str = ""  # the default key(s), comma-separated; "" = in the palette only
    footer: str = ""  # the footer's short label; "" = not in the footer
    edits: bool = False  # changes the session (or asks to): refused, and hidden, during a replay
    priority: bool = False  # runs as the key arrives, before the focused widget sees it


ACTIONS: tuple[Action, ...] = (
    Action("help", "Help", "all keys and /commands", "f1", footer="Help"),
    Action("stop", "Stop reply", "cancel the streaming reply, keeping what arrived", "escape", footer="Stop reply",
           edits=True),
    # Before the composer's own Ctrl+E (end of line: End does that too), so it works where the user types.
    Action("edit_system", "Edit system prompt", "change the system prompt", "ctrl+e", footer="System prompt",
           edits=True, priority=True),
    Action("attach", "Attach document", "paste or attach text as an untrusted, fenced message", "ctrl+o",
           footer="Attach doc", edits=True),
    Action("next_tab", "Next pane tab", "document, tokens, cache, ledger, cost, request, diff, review", "ctrl+t",
           footer="Next tab"),
    Action("search_prompts", "Search prompt history",
           "what you sent, here and in other sessions, to the composer (Ctrl+R; Up in an empty composer)", "ctrl+r"),
    Action("pick_model", "Pick model", "choose from the server's /v1/models", "f2", footer="Model", edits=True),
    Action("pick_template", "Pick template", "chat template used to render the document", "f3", footer="Template",
           edits=True),
    Action("pick_policy", "Pick truncation policy", "keep-all, drop-oldest, keep-last-n, summarise", "f4",
           footer="Policy", edits=True),
    Action("toggle_fences", "Toggle fences", "fence untrusted text (on by default)", "f5", footer="Fences",
           edits=True),
    # f6/f7 are the composer's (select line / select all)
    Action("settings", "Settings", "context window, max tokens, policy, temperature and sampling, endpoint",
           "f8,ctrl+comma", footer="Settings", edits=True),
    Action("fit_and_send", "Fit to the window and send",
           "drop the oldest turns to fit the server's window, send the composer's message (F9)", "f9", edits=True),
    # The transcript shows Undo/Redo in its footer; in the composer, Ctrl+Z undoes typing (its own binding).
    Action("undo", "Undo", "take back the last change; what was done since stays (Ctrl+Z outside the composer)",
           "ctrl+z", edits=True),
    Action("redo", "Redo", "do again what was undone (Ctrl+Y outside the composer)", "ctrl+y", edits=True),
    Action("quit", "Quit", "save and leave", "ctrl+q", footer="Quit"),
    Action("pick_tokenizer", "Pick tokenizer", "tokenizer used to count", edits=True),
    Action("trust_endpoint", "Send my API key to this endpoint", "trust the URL the session named with your key",
           edits=True),
    Action("reconnect", "Reconnect", "connect to the server again (or to the endpoint set in Settings)", edits=True),
    Action("edit_message", "Edit focused message", "edit the message that has focus", edits=True),
    Action("delete_message", "Delete focused message", "delete the message that has focus", edits=True),
    Action("pin_message", "Pin focused message", "never drop it", edits=True),
    Action("resend_from_here", "Resend from focused message", "keep what follows as a branch and send again",
           edits=True),
    Action("retry", "Retry last question", "ask it again; the old reply is kept as a branch (/retry)", edits=True),
    Action("summarise_now", "Summarise dropped turns now",
           "switch to the summarise policy and make the summary (/summarise)", edits=True),
    Action("replay", "Replay this session", "step through its requests as they were sent", edits=True),
    Action("open_session", "Open session", "browse, search, rename, delete saved sessions", edits=True),
    Action("new_session", "New session", "start an empty conversation (this one is saved)", edits=True),
    Action("continue_in_new_session", "Continue in a new session",
           "the whole history in a new session this app writes (the way on from one another ctxpane holds)", "f10",
           edits=True),
    Action("rename_session", "Rename session", "give this session a title (shown in the session browser)",
           edits=True),
    Action("export_markdown", "Export transcript", "write the conversation as Markdown beside the session"),
    Action("search_chat", "Search transcript", "find text in the messages (then n / N in the transcript)"),
    Action("copy_reply", "Copy reply", "the selected message (else the last reply) as Markdown text"),
    Action("copy_code", "Copy code block", "a code block of the selected message or last reply (again: the next)"),
    Action("copy_exact", "Copy exact text",
           "the selected message (else the last reply) with its control characters: asks first"),
    Action("copy_document", "Copy document", "the rendered document the model is sent (control characters made "
           "visible)"),
    Action("copy_curl", "Copy request as curl", "the key as its $VARIABLE, never the key"),
    Action("load_tools", "Load tools…", "a JSON file of tool definitions (risky ones reviewed, commands off unless "
           "set)", edits=True),
    # A dialog never opens by itself when calls wait (the user may be typing): this key or the palette opens it.
    Action("answer_tool_calls", "Answer tool calls", "the model's waiting tool calls: answer, run or refuse",
           "ctrl+l", edits=True),
    Action("context_grid", "Context grid", "what fills the window: system, tools, messages, reserved, free "
           "(/context)"),
)
BY_ID = {action.id: action for action in ACTIONS}
# The tool-call dialog's Run command. Running a command is a deliberate act: its key is bound nowhere else in the app
# (config.toml's [keys] may not take it either), nor by Textual's editors (Ctrl+R, which it was, is the composer's
# prompt search), and it is never typed in a text. tests/test_actions_table.py holds it.
RUN_TOOL_KEY = "f12"
EDITING = frozenset(action.id for action in ACTIONS if action.edits) | {"show_branch"}

# Keys that are not actions of the table: they move the focus, as the key arrives (priority): as a screen's
# bindings they ran after the focused widget's queue had taken the keys behind them.
FOCUS_BINDINGS = [
    Binding("tab", "focus_step(True)", show=False, priority=True),
    Binding("shift+tab", "focus_step(False)", show=False, priority=True),
]


def app_bindings() -> list[Binding]:
    """The App's bindings: each keyed action of the table, then the focus keys."""
    keyed = [Binding(action.key, action.id, action.footer or action.title, id=action.id, show=bool(action.footer),
                     priority=action.priority) for action in ACTIONS if action.key]
    return [*keyed, *FOCUS_BINDINGS]


def help_rows(keymap: dict[str, str]) -> Iterable[tuple[str, str, str]]:
    """F1's lines for the table: the key as mapped now, the title, and where it works (an action with no key is
    reached from the palette, Ctrl+P)."""
    for action in ACTIONS:
        key = keymap.get(action.id, action.key)
        yield (key, action.title, "app") if key else ("ctrl+p", action.title, "palette")
