"""Attaching by `file:PATH` (Ctrl+O): the file is read off the loop, bounded, text only, and sent fenced."""

from __future__ import annotations

import pytest

from controller_helpers import harness  # noqa: F401 - a fixture
from tui.controller.attaching import read_attachment, AttachError
from tui.controller.events import Notice


async def attach(harness, text: str, label: str):
    ctl = await harness.ready()
    before = len(ctl.wb.session.messages)
    ctl.attach(text, label)
    await harness.idle()
    return ctl, ctl.wb.session.messages[before:], [e for e in harness.of(Notice) if e.severity == "error"]


async def test_a_path_typed_as_the_text_attaches_that_file_fenced(harness, tmp_path):
    """Seen: typing file:/path in the Ctrl+O dialog did nothing."""
    notes = tmp_path / "notes.txt"
    notes.write_text("Quota: 250 GB.\n", encoding="utf-8")
    ctl, added, errors = await attach(harness, f"file:{notes}", "file:pasted.txt")
    assert not errors and [m.text() for m in added] == ["Quota: 250 GB.\n"]
    assert not added[0].provenance.trusted and added[0].provenance.label == "file:notes.txt"
    assert any(f.message == len(ctl.wb.session.messages) - 1 for f in ctl.wb.view.fences)


async def test_a_path_as_the_label_with_nothing_pasted_attaches_it(harness, tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("hello", encoding="utf-8")
    _ctl, added, errors = await attach(harness, "", f"file:{notes}")
    assert not errors and [m.text() for m in added] == ["hello"]


@pytest.mark.parametrize("kind", ["missing", "directory", "binary", "huge", "latin1"])
async def test_a_file_that_cannot_be_attached_says_why(harness, tmp_path, kind):
    path = tmp_path / "f.bin"
    if kind == "directory":
        path.mkdir()
    elif kind == "binary":
        path.write_bytes(b"\x89PNG\r\n\x00\x00")
    elif kind == "huge":
        path.write_bytes(b"a" * (3 * 1024 * 1024))
    elif kind == "latin1":
        path.write_bytes("caf\xe9".encode("latin-1"))
    _ctl, added, errors = await attach(harness, f"file:{path}", "")
    assert added == [] and len(errors) == 1 and "not attached" in errors[0].text


def test_a_fifo_is_refused_without_blocking(tmp_path):
    import os
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(AttachError, match="not a regular file"):
        read_attachment(fifo)


@pytest.mark.parametrize("name, said", [("notes.txt", "2 MiB allowed for a text file"),
                                        ("photo.png", "over the 20 MiB")])
def test_a_file_over_every_limit_names_the_limit_of_its_kind(tmp_path, name, said):
    path = tmp_path / name
    with path.open("wb") as handle:  # sparse: 21 MiB on the file system, nothing written
        handle.truncate(21 * 1024 * 1024)
    with pytest.raises(AttachError, match=said):
        read_attachment(path)
