"""Copy a reply, a code block of it, the exact document, or the request as curl.

The text goes to the terminal's clipboard with Textual's `App.copy_to_clipboard` (OSC 52). Many terminals
refuse OSC 52 (or ask first) and the app cannot tell, so the same text is also written, off the loop, to
`$XDG_CACHE_HOME/ctxpane/clipboard.txt` (readable by the user only), and the notice says both. The curl
command names the key by its variable (`$OPENAI_API_KEY`): the key itself is never copied or written.

What is copied comes from outside (a model's reply, a tool result) and will be pasted into another program, a
shell most often: it is made safe to paste first (`paste_safe`: an ESC ending a bracketed paste would run the
rest as typed), and the notice says how many characters became stand-ins. The palette's "Copy exact text"
copies the bytes as they are, after a confirmation that says why that is dangerous.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from platformdirs import user_cache_dir

from tui.context.untrusted.redaction import Redactor
from tui.context.untrusted.visible import paste_safe
from tui.sessions.redacted import outside_words
from tui.sessions.transfer import curl_command

from tui.app.screens.confirm import ConfirmScreen

if TYPE_CHECKING:
    from tui.app.app import CtxpaneApp


def clipboard_file() -> Path:
    return Path(user_cache_dir("ctxpane", appauthor=False)) / "clipboard.txt"


def _write_private(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
    os.replace(temporary, path)


def code_blocks(markdown: str) -> list[tuple[str, str]]:
    """The fenced and indented code blocks of a Markdown text: (language, code), in order."""
    from markdown_it import MarkdownIt  # Rich's Markdown parser, installed with Textual
    tokens = MarkdownIt("commonmark").parse(markdown)
    return [((token.info or "").split(" ")[0], token.content) for token in tokens
            if token.type in ("fence", "code_block")]


class Copier:
    def __init__(self, app: "CtxpaneApp") -> None:
        self.app = app
        self._next_block: tuple[str, int] = ("", 0)  # (message id, block) that `y` copies next

    def copy(self, what: str, text: str, exact: bool = False) -> None:
        """To the clipboard (OSC 52), and to the fallback file; the notice says what and where, and how many
        characters were made visible to keep the paste safe (none when `exact`)."""
        changed = 0
        if exact:
            self.app.copy_exact(text)
        else:
            text, changed = paste_safe(text)
            self.app.copy_to_clipboard(text)
        path = clipboard_file()
        made_safe = (f"; {changed:,} control character{'s' if changed != 1 else ''} made visible so that pasting "
                     "runs nothing (palette: Copy exact text)") if changed else ""

        def write() -> None:
            try:
                _write_private(path, text)
                note = f"also in {path} (if your terminal refuses clipboard writes, OSC 52)"
                severity = "warning" if exact else "information"
            except OSError as exc:
                note = f"could not also write {path}: {exc.strerror or exc}"
                severity = "warning"
            self.app.call_from_thread(self.app.notify, f"Copied {what} ({len(text):,} characters){made_safe}; "
                                      f"{note}", title="Copied", severity=severity)
        self.app.run_worker(write, thread=True, group="copy", exit_on_error=False)

    def _reply(self):
        """The selected message, else the last reply."""
        from tui.app.chat.panel import ChatPanel
        panel = self.app.main(ChatPanel)
        focused = panel.focused()
        if focused is not None:
            return focused
        for index in range(len(panel.state.messages) - 1, -1, -1):
            if panel.state.messages[index].role == "assistant":
                return index, panel.state.messages[index]
        return None

    def copy_reply(self) -> None:
        found = self._reply()
        if found is None:
            self.app.notify("Nothing to copy: no reply yet", severity="warning", markup=False)
            return
        index, message = found
        self.copy(f"{message.role} message #{index}", message.text())

    def copy_code(self) -> None:
        """A code block of the selected message (or the last reply); pressed again, the next one."""
        found = self._reply()
        blocks = code_blocks(found[1].text()) if found else []
        if not blocks:
            self.app.notify("No code block in this message", severity="warning", markup=False)
            return
        index, message = found
        key = message.id or f"#{index}"
        previous_key, at = self._next_block
        at = at % len(blocks) if previous_key == key else 0
        self._next_block = (key, at + 1)
        language, code = blocks[at]
        label = f"code block {at + 1} of {len(blocks)}" + (f" ({language})" if language else "")
        self.copy(f"{label} of message #{index}", code)

    def copy_exact(self) -> None:
        """The selected message (or the last reply) byte for byte, after a confirmation: its control characters
        reach the clipboard too, and a terminal or shell that it is pasted into may act on them."""
        found = self._reply()
        if found is None:
            self.app.notify("Nothing to copy: no reply yet", severity="warning", markup=False)
            return
        index, message = found
        text = message.text()
        unsafe = paste_safe(text)[1]
        if not unsafe:
            self.copy(f"{message.role} message #{index}", text)
            return
        question = (f"Copy {message.role} message #{index} exactly, with its {unsafe:,} control character"
                    f"{'s' if unsafe != 1 else ''}? Pasted into a terminal, an escape sequence in it can end a "
                    "bracketed paste and run the rest as a command. Copy the exact text only to paste it into an "
                    "editor or a file.")

        def done(yes: bool | None) -> None:
            if yes:
                self.copy(f"{message.role} message #{index} exactly, control characters included", text, exact=True)
        self.app.push_screen(ConfirmScreen(question), done)

    def copy_document(self) -> None:
        view = self.app.controller.wb.view
        if view is None:
            self.app.notify("The document is not ready yet", severity="warning", markup=False)
            return
        self.copy("the document", view.document.text)

    def copy_curl(self) -> None:
        pane = self.app.controller.pane_state()
        if pane is None:
            self.app.notify("The request is not ready yet", severity="warning", markup=False)
            return
        body = dict(pane.body)
        shown = Redactor().value(body, outside_words, by_name=True)  # a key put in [params] is not copied
        masked = " and credential fields as ***" if shown != body else ""
        self.copy(f"the request as curl (the key as ${pane.key_env}{masked})",
                  curl_command(pane.url, shown, pane.key_env))
