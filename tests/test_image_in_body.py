"""An image in a request body is measured from its own bytes (issue 18): the size is read from the data: URL's
header (bounded), the family's rule applied, and the label, the header count and the per-turn table agree.

Before: a data-URL image in a chat-completions body (render, import, tap, replay) was "size unknown, 448x448
assumed", though its bytes were right there; the header said 1 and the table 6 for the same image.
"""

from __future__ import annotations

import base64
import json

import pytest

from image_bytes import gif, jpeg, png, webp_lossless
from tui.context.images.tokens import estimate, image_label, part_estimate

MAKERS = {"PNG": png, "JPEG": jpeg, "GIF": gif, "WebP": webp_lossless}
MIME = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WebP": "image/webp"}


def body_part(kind: str, width: int, height: int) -> dict:
    data = base64.b64encode(MAKERS[kind](width, height)).decode()
    return {"type": "image_url", "image_url": {"url": f"data:{MIME[kind]};base64,{data}"}}


@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_the_size_comes_from_the_data_url(kind):
    part = body_part(kind, 1024, 768)
    found = part_estimate(part, "openai")
    assert (found.width, found.height) == (1024, 768) and not found.how.startswith("size unknown")
    assert found.tokens == estimate(1024, 768, "openai").tokens == 765  # OpenAI's tiles: 85 + 170 x 4
    assert image_label(part, "openai") == f"[image 1024×768 {kind}, ~765 tokens estimate]"


@pytest.mark.parametrize("url", [
    "data:image/png;base64," + base64.b64encode(png(1, 1)[:20]).decode(),  # cut short
    "data:image/png;base64,!!!!not base64",
    "data:text/plain;base64," + base64.b64encode(b"hello").decode(),
    "data:image/png," + "x" * 50,  # not base64
    "data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 8 + b"IHDR" +
                                                (10 ** 6).to_bytes(4, "big") * 2).decode(),  # a lying header
])
def test_a_header_that_lies_or_is_cut_is_the_assumed_size_and_says_so(url):
    found = part_estimate({"type": "image_url", "image_url": {"url": url}}, "openai")
    assert found.how.startswith("size unknown")


def test_render_of_a_body_with_an_image_agrees_in_every_view(cli_in_process, tmp_path):
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": [
        {"type": "text", "text": "What is in this picture?"}, body_part("PNG", 1024, 768)]}]}
    path = tmp_path / "body.json"
    path.write_text(json.dumps(body))
    result = cli_in_process("render", str(path), "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    hidden = data["hidden_tokens"]
    assert [(i["estimate"], i["format"], i["width"]) for i in hidden["images"]] == [(765, "PNG", 1024)]
    assert hidden["images"][0]["label"] == "[image 1024×768 PNG, ~765 tokens estimate]"
    assert hidden["totals"]["images"] == sum(turn["images"] for turn in hidden["turns"])
    assert data["sent_tokens"] == sum(turn["total"] for turn in hidden["turns"])
    summary = cli_in_process("render", str(path))
    assert f"tokens: {data['sent_tokens']} sent ({data['tokens']['total']} in the document + 765 for images" in \
        summary.stderr, summary.stderr


def test_the_bytes_win_over_a_stated_size_and_wrapped_or_bare_urls_are_read():
    """Found by review: a stated 1x1 beat a 2048x2048 PNG's own header; base64 wrapped at 76 columns and the
    string form of image_url were not read."""
    data = png(2048, 2048)
    lying = {"type": "image_url", "image_url": {"url": "data:image/png;base64," + base64.b64encode(data).decode()},
             "width": 1, "height": 1}
    assert part_estimate(lying, "openai").tokens == estimate(2048, 2048, "openai").tokens
    wrapped = {"type": "image_url", "image_url": {"url": "data:image/png;base64," +
                                                  base64.encodebytes(png(1024, 768)).decode()}}
    assert (part_estimate(wrapped, "openai").width, part_estimate(wrapped, "openai").height) == (1024, 768)
    bare = {"type": "image_url", "image_url": "data:image/gif;base64," + base64.b64encode(gif(64, 32)).decode()}
    assert image_label(bare, "openai").startswith("[image 64×32 GIF,")
