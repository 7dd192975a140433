"""Attaching an image (Ctrl+O, `file:PATH`): a data: URL part with its pixel size, counted per family, labelled."""

from __future__ import annotations

import base64

import pytest

from controller_helpers import harness  # noqa: F401 - a fixture
from image_bytes import gif, jpeg, png, png_header, webp_lossless
from tui.context.images.files import ImageFileError, image_size
from tui.controller.attaching import read_attachment
from tui.controller.events import Notice


async def attach(harness, path):
    ctl = await harness.ready()
    before = len(ctl.wb.session.messages)
    ctl.attach(f"file:{path}", "")
    await harness.idle()
    notices = harness.of(Notice)
    return ctl, ctl.wb.session.messages[before:], [n for n in notices if n.severity == "error"], notices


@pytest.mark.parametrize("make,kind", [(png, "PNG"), (jpeg, "JPEG"), (gif, "GIF"), (webp_lossless, "WebP")])
def test_the_pixel_size_is_read_from_each_formats_header(make, kind):
    assert image_size(make(1024, 768)) == (kind, 1024, 768)
    assert image_size(make(3, 5)) == (kind, 3, 5)


async def test_a_png_attaches_as_a_data_url_part_with_its_size(harness, tmp_path):
    path = tmp_path / "chart.png"
    data = png(1024, 768)
    path.write_bytes(data)
    ctl, added, errors, notices = await attach(harness, path)
    assert not errors and len(added) == 1
    [part] = added[0].content
    assert part["type"] == "image_url" and (part["width"], part["height"], part["format"]) == (1024, 768, "PNG")
    assert part["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(data).decode()
    assert not added[0].provenance.trusted and added[0].provenance.label == "file:chart.png"
    # what is sent carries the part without ctxpane's own keys
    sent = ctl.wb.view.snapshot.wire[-1]["content"][0]
    assert set(sent) == {"type", "image_url"} and sent["image_url"]["url"].startswith("data:image/png;base64,")
    [image] = ctl.wb.view.hidden.images
    assert (image.width, image.height, image.format) == (1024, 768, "PNG")
    # the harness's template is no vision model's: the 28x28 default, 1036x756 -> 37x27 = 999 patches + 2 = 1001
    assert image.estimate.tokens == 1001 and image.label == "[image 1024×768 PNG, ~1001 tokens estimate]"
    # chatml takes no content parts: rendered as llama.cpp's server does, the image its media marker in the text,
    # whose tokens the image's take the place of: the document counts the marker, the rest is added
    view = ctl.wb.view
    assert image.placeholder == "<__media__>" and "<__media__>" in view.document.text
    assert "base64" not in view.document.text and image.placeholder_tokens > 0
    assert view.image_tokens == 1001 - image.placeholder_tokens
    assert view.sent_tokens == view.snapshot.counts.total + view.image_tokens
    turn = next(t for t in view.hidden.turns if t.message_id == added[0].id)
    assert turn.counts["images"] == 1001 and turn.counts["text"] == 0
    assert any("media marker" in note for note in view.hidden.notes)
    assert any("attached image chart.png (1024×768 PNG)" in n.text for n in notices)


async def test_a_jpeg_attaches_too(harness, tmp_path):
    path = tmp_path / "photo.jpg"
    path.write_bytes(jpeg(640, 480))
    _ctl, added, errors, _ = await attach(harness, path)
    assert not errors and added[0].content[0]["image_url"]["url"].startswith("data:image/jpeg;base64,")
    assert (added[0].content[0]["width"], added[0].content[0]["height"]) == (640, 480)


@pytest.mark.parametrize("name,data,says", [
    ("trunc.png", png(8, 8)[:20], "truncated"),
    ("huge.png", png_header(100_000 + 1, 100_000 + 1), "over 100000 on a side"),
    ("bomb.png", png_header(100_000, 100_000), "10000000000 pixels"),
    ("bomb.gif", gif(65535, 65535), "4294836225 pixels"),
    ("zero.png", png_header(0, 0), "0x0"),
    ("wrong.png", b"GIF00a" + b"\x00" * 40, "unknown magic bytes"),
    ("noframe.jpg", b"\xff\xd8\xff\xd9", "no frame header"),
    ("trunc.jpg", jpeg(10, 10)[:24], "truncated"),
    ("badwebp.webp", b"RIFF\x00\x00\x00\x00WEBPXXXX" + b"\x00" * 20, "unsupported WebP"),
])
async def test_a_hostile_image_says_one_clear_line(harness, tmp_path, name, data, says):
    path = tmp_path / name
    path.write_bytes(data)
    _ctl, added, errors, _ = await attach(harness, path)
    assert added == [] and len(errors) == 1
    assert errors[0].text.startswith("not attached: ") and says in errors[0].text and "\n" not in errors[0].text


def test_declared_dimensions_at_the_bound_are_accepted_and_beyond_refused():
    assert image_size(png_header(100_000, 1)) == ("PNG", 100_000, 1)
    with pytest.raises(ImageFileError, match="100001x1"):
        image_size(png_header(100_001, 1))


def test_an_image_over_the_size_limit_is_refused(tmp_path, monkeypatch):
    import tui.context.images.files as files
    monkeypatch.setattr(files, "IMAGE_LIMIT", 1000)
    path = tmp_path / "big.png"
    path.write_bytes(png(100, 100) + b"\x00" * 2000)
    from tui.controller.attaching import AttachError
    with pytest.raises(AttachError, match="over the"):
        read_attachment(path)


def test_an_image_part_round_trips_through_the_session_file_and_bad_ones_are_refused():
    import json as _json

    from tui.context.messages import Message
    from tui.sessions.model import Session, SessionFormatError
    from tui.sessions.parse import decode_session
    from tui.sessions.store import session_text
    from tui.context.images.files import image_part

    part = image_part(png(640, 480), "shot.png")
    session = Session(messages=[Message("user", [part], id="m1")])
    again, _version = decode_session(session_text(session).encode())
    assert again.messages[0].content == [part]  # size, format and name kept in the file (not sent)
    assert "width" not in again.messages[0].to_wire()["content"][0]
    from tui.sessions.transfer import export_markdown
    exported = export_markdown(again)
    assert "[image 640×480 PNG, ~" in exported and "base64" not in exported
    for field, value in [("width", 0), ("height", 100_001), ("format", "BMP\x1b[31m"), ("name", "n" * 600),
                         ("width", "wide")]:
        data = _json.loads(session_text(session))
        data["messages"][0]["content"][0][field] = value
        with pytest.raises(SessionFormatError):
            decode_session(_json.dumps(data).encode())
