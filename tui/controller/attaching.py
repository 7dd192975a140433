"""Attaching a file by `file:PATH`: read off the event loop, bounded, sent as untrusted.

A text file is sent fenced. An image (PNG, JPEG, GIF or WebP, known by its magic bytes) becomes an
`image_url` content part with a base64 data: URL, its pixel size read from its header and kept for
counting (tui/context/images/files.py). The path may be given as the dialog's label with nothing
pasted, or typed alone as the pasted text. Every problem (missing, unreadable, a directory or FIFO,
binary, too big, a corrupt or hostile image) is one clear line.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tui.context.images.files import IMAGE_LIMIT, ImageFileError, image_format, image_part
from tui.context.untrusted.visible import visible
from tui.sessions.safe_io import SessionFileError, read_regular_file
from tui.controller.events import Severity

if TYPE_CHECKING:
    from tui.controller.editing import Editing
    from tui.controller.parts import Parts
    from tui.controller.workbench import Workbench

ATTACH_LIMIT = 2 * 1024 * 1024  # bytes: a document for a context window, not an archive
IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp"})
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


def read_attachment(path: Path, limit: int = ATTACH_LIMIT) -> str | dict[str, Any]:
    """The file's text, or an image content part; binary or non-UTF-8 content is refused rather than sent
    as mojibake."""
    image_named = path.suffix.lower() in IMAGE_SUFFIXES
    try:
        data = read_regular_file(path, max(limit, IMAGE_LIMIT))
    except SessionFileError as exc:
        if not image_named and " MiB, over the " in str(exc):  # name the limit of what it is likely to be
            raise AttachError(f"{str(exc).split(', over the ')[0]}, over the {limit // (1024 * 1024)} MiB allowed "
                              f"for a text file ({IMAGE_LIMIT // (1024 * 1024)} MiB for an image)") from None
        raise AttachError(str(exc)) from None
    if image_format(data) is not None or image_named:
        try:
            return image_part(data, path.name)
        except ImageFileError as exc:
            raise AttachError(f"{path.name}: {exc}") from None
    if len(data) > limit:
        raise AttachError(f"{path} is {len(data) // (1024 * 1024)} MiB, over the {limit // (1024 * 1024)} MiB "
                          "allowed for a text file")
    if b"\x00" in data[:8192]:
        raise AttachError(f"{path} looks binary (it holds NUL bytes): only text files are attached")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise AttachError(f"{path} is not UTF-8 text (byte {exc.start}): only text files are attached") from None


class Attaching:
    def __init__(self, parts: "Parts", editing: "Editing") -> None:
        self.parts, self.editing = parts, editing  # editing: a document attached is an edit (undo takes it back)

    def attach(self, text: str, label: str, key: str = "") -> None:
        if self.editing.answering():  # it would land between the question and its reply
            return
        path = named_path(text, label)
        if path is not None:
            self.parts.runtime.spawn(lambda: self._attach_file(path, key), "attach")
        elif text.strip():
            added = self.parts.wb.add_document(text, label or "document", key=key)
            self.editing.inserted(added, f"attach {label or 'document'}")
            self.parts.changed()

    async def _attach_file(self, path: Path, key: str = "") -> None:
        parts, wb = self.parts, self.parts.wb
        try:
            text = await asyncio.to_thread(read_attachment, path)
        except AttachError as exc:
            parts.notify(f"not attached: {visible(str(exc))}", severity=Severity.ERROR, timeout=10)
            return
        if isinstance(text, dict):
            self._landed(wb, path, text)
            return
        if not text.strip():
            parts.notify(f"not attached: {visible(str(path))} is empty", severity=Severity.WARNING)
            return
        if not self._can_land(wb, path):
            return
        added = wb.add_document(text, PREFIX + path.name, key=key)
        self.editing.inserted(added, f"attach {visible(path.name)}")
        parts.changed()
        parts.notify(f"attached {visible(path.name)} ({len(text)} characters, fenced as untrusted)")

    def _can_land(self, wb: Workbench, path: Path) -> bool:
        """A file read off the loop lands only in the session it was asked for, and not under a streaming reply."""
        parts = self.parts
        if parts.wb is not wb:  # read while another session was opened: not into that one
            parts.notify(f"{visible(path.name)} was not attached: another session was opened meanwhile",
                       severity=Severity.WARNING)
            return False
        return not self.editing.answering()

    def _landed(self, wb: Workbench, path: Path, part: dict[str, Any]) -> None:
        """An image read off the loop lands as a user message of one image part (untrusted, like any file)."""
        parts = self.parts
        if not self._can_land(wb, path):
            return
        added = wb.add_image(part, PREFIX + path.name)
        self.editing.inserted(added, f"attach {visible(path.name)}")
        parts.changed()
        parts.notify(f"attached image {visible(path.name)} ({part['width']}×{part['height']} {part['format']})")
