"""Attaching a file by `file:PATH`: read off the event loop, bounded, text only, sent fenced as untrusted.

The path may be given as the dialog's label with nothing pasted, or typed alone as the pasted text.
Every problem (missing, unreadable, a directory or FIFO, binary, too big) is one clear line.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from tui.context.safety import visible
from tui.sessions.safe_io import SessionFileError, read_regular_file

if TYPE_CHECKING:
    from .controller import Controller

ATTACH_LIMIT = 2 * 1024 * 1024  # bytes: a document for a context window, not an archive
PREFIX = "file:"


class AttachError(Exception):
    """A file that cannot be attached; one line."""


def named_path(text: str, label: str) -> Path | None:
    """The file to attach: `file:PATH` typed alone as the text, or as the label with nothing pasted."""
    typed = text.strip()
    if typed.startswith(PREFIX) and "\n" not in typed:
        return Path(typed.removeprefix(PREFIX)).expanduser()
    if not typed and label.startswith(PREFIX):
        return Path(label.removeprefix(PREFIX)).expanduser()
    return None


def read_attachment(path: Path, limit: int = ATTACH_LIMIT) -> str:
    """The file's text; binary or non-UTF-8 content is refused rather than sent as mojibake."""
    try:
        data = read_regular_file(path, limit)
    except SessionFileError as exc:
        raise AttachError(str(exc)) from None
    if b"\x00" in data[:8192]:
        raise AttachError(f"{path} looks binary (it holds NUL bytes): only text files are attached")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise AttachError(f"{path} is not UTF-8 text (byte {exc.start}): only text files are attached") from None


class Attaching:
    def __init__(self, controller: "Controller") -> None:
        self.ctl = controller

    def attach(self, text: str, label: str) -> None:
        if self.ctl.answering():  # it would land between the question and its reply
            return
        path = named_path(text, label)
        if path is not None:
            self.ctl.runtime.spawn(lambda: self._attach_file(path), "attach")
        elif text.strip():
            self.ctl.wb.add_document(text, label or "document")
            self.ctl.changed()

    async def _attach_file(self, path: Path) -> None:
        ctl, wb = self.ctl, self.ctl.wb
        try:
            text = await asyncio.to_thread(read_attachment, path)
        except AttachError as exc:
            ctl.notify(f"not attached: {visible(str(exc))}", severity="error", timeout=10)
            return
        if not text.strip():
            ctl.notify(f"not attached: {visible(str(path))} is empty", severity="warning")
            return
        if ctl.wb is not wb:  # read while another session was opened: not into that one
            ctl.notify(f"{visible(path.name)} was not attached: another session was opened meanwhile",
                       severity="warning")
            return
        if ctl.answering():
            return
        wb.add_document(text, PREFIX + path.name)
        if ctl.wb is wb:
            ctl.changed()
            ctl.notify(f"attached {visible(path.name)} ({len(text)} characters, fenced as untrusted)")
