"""The command palette's entries: every action, what Undo and Redo would do, each branch that can be shown.

Titles carry outside text (file names, a branch's first words, theme names): each is one line and escaped,
never read as markup.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from textual.app import SystemCommand
from textual.markup import escape

from tui.app.shown import one_line
from tui.app.slash_commands import show_context

if TYPE_CHECKING:
    from tui.app.app import CtxpaneApp


def palette_commands(app: "CtxpaneApp") -> Iterable[SystemCommand]:
    commands = [
        ("Edit system prompt", "change the system prompt", app.action_edit_system),
        ("Attach document", "paste or attach text as an untrusted, fenced message", app.action_attach),
        ("Pick model", "choose from the server's /v1/models", app.action_pick_model),
        ("Send my API key to this endpoint", "trust the URL the session named with your key",
         app.action_trust_endpoint),
        ("Pick template", "chat template used to render the document", app.action_pick_template),
        ("Pick tokenizer", "tokenizer used to count", app.action_pick_tokenizer),
        ("Pick truncation policy", "keep-all, drop-oldest, keep-last-n, summarise", app.action_pick_policy),
        ("Settings", "context window, max tokens, policy, temperature and sampling, endpoint",
         app.action_settings),
        ("Reconnect", "connect to the server again (or to the endpoint set in Settings)", app.action_reconnect),
        ("Toggle fences", "fence untrusted text (on by default)", app.action_toggle_fences),
        ("Stop reply", "cancel the streaming reply, keeping what arrived", app.action_stop),
        ("Edit focused message", "edit the message that has focus", app.action_edit_message),
        ("Delete focused message", "delete the message that has focus", app.action_delete_message),
        ("Pin focused message", "never drop it", app.action_pin_message),
        ("Resend from focused message", "keep what follows as a branch and send again", app.action_resend_from_here),
        ("Next pane tab", "document, tokens, cache, ledger, cost, request, diff", app.action_next_tab),
        ("Replay this session", "step through its requests as they were sent", app.action_replay),
        ("Open session", "browse, search, rename, delete saved sessions", app.action_open_session),
        ("New session", "start an empty conversation (this one is saved)", app.action_new_session),
        ("Rename session", "give this session a title (shown in the session browser)", app.dialogs.rename_session),
        ("Export transcript", "write the conversation as Markdown beside the session", app.action_export_markdown),
        ("Search transcript", "find text in the messages (then n / N in the transcript)", app.action_search_chat),
        ("Copy reply", "the selected message (else the last reply) as Markdown text", app.action_copy_reply),
        ("Copy code block", "a code block of the selected message or last reply (again: the next)",
         app.action_copy_code),
        ("Copy exact text", "the selected message (else the last reply) with its control characters: asks first",
         app.action_copy_exact),
        ("Copy document", "the rendered document the model is sent (control characters made visible)",
         app.action_copy_document),
        ("Copy request as curl", "the key as its $VARIABLE, never the key", app.action_copy_curl),
        ("Context grid", "what fills the window: system, tools, messages, reserved, free (/context)",
         _named("action_context", lambda: show_context(app))),
        ("Retry last question", "ask it again; the old reply is kept as a branch (/retry)",
         _named("action_resend_from_here", app.controller.slash.retry)),
        ("Summarise dropped turns now", "switch to the summarise policy and make the summary (/summarise)",
         _named("action_pick_policy", app.controller.slash.summarise)),
        ("Search prompt history", "what you sent, here and in other sessions, to the composer (Ctrl+R; Up in an "
         "empty composer)", app.action_search_prompts),
        ("Fit to the window and send", "drop the oldest turns to fit the server's window, send the composer's "
         "message (F9)", app.action_fit_and_send),
        ("Help", "all keys and /commands", app.action_help),
    ]
    history = app.controller.history
    if history.redo_label:
        commands.insert(0, (f"Redo {history.redo_label}", "do again what was undone (Ctrl+Y outside the "
                            "composer)", app.action_redo))
    if history.next_label:
        commands.insert(0, (f"Undo {history.next_label}", "take back the last change; what was done since "
                            "stays (Ctrl+Z outside the composer)", app.action_undo))
    for index, (place, branch) in enumerate(app.controller.branches()):
        first = branch.messages[0].text()[:40] if branch.messages else ""
        commands.append((f"Show branch at #{place}: {first}", f"{len(branch.messages)} messages, kept "
                         f"{branch.label}; the one shown now is kept in turn", _shows_branch(app, index)))
    for name in app.pane_themes:
        commands.append((f"Theme: {name}", "switch the theme", lambda n=name: setattr(app, "theme", n)))
    for title, help_text, callback in commands:
        if app.check_action(getattr(callback, "__name__", "").removeprefix("action_"), ()):
            # labels carry outside text (file names, a branch's first words): one line, never markup
            yield SystemCommand(escape(one_line(title, 200)), escape(one_line(help_text, 400)), callback)


def _named(action: str, callback):
    """`callback` under an action's name, so the palette's check (a replay refuses changes) reads it."""
    def named() -> None:
        callback()
    named.__name__ = action
    return named


def _shows_branch(app: "CtxpaneApp", index: int):
    """The callback for one branch, named as the action so a replay (check_action) leaves it out."""
    def action_show_branch() -> None:
        app.action_show_branch(index)
    return action_show_branch
