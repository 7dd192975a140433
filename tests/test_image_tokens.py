"""Image tokens per family from the pixel size: worked examples, the arithmetic done by hand in the comments."""

from __future__ import annotations

import pytest

from tui.context.images.tokens import FAMILIES, estimate, family_for, image_label, part_estimate, with_media_markers


@pytest.mark.parametrize("width,height,detail,tokens", [
    # 1024x768: fits 2048; shortest side 768 is not over 768; tiles ceil(1024/512)=2 x ceil(768/512)=2 = 4;
    # 85 + 170*4 = 765 (the example OpenAI documents)
    (1024, 768, "high", 765),
    # 2048x4096: fit 2048 -> 1024x2048; shortest 1024 > 768 -> x0.75 -> 768x1536; tiles 2x3 = 6; 85 + 1020 = 1105
    (2048, 4096, "high", 1105),
    # 4000x3000: fit -> 2048x1536; shortest 1536 -> x0.5 -> 1024x768: 4 tiles, 765
    (4000, 3000, "high", 765),
    # 100x100: one tile: 85 + 170 = 255
    (100, 100, "high", 255),
    # low detail is 85 whatever the size
    (4000, 3000, "low", 85),
])
def test_openai_tiles(width, height, detail, tokens):
    assert estimate(width, height, "openai", detail).tokens == tokens


@pytest.mark.parametrize("width,height,tokens", [
    (1000, 1000, 1334),  # 1,000,000 / 750 = 1333.3 -> 1334 (Anthropic's table: ~1334)
    (1092, 1092, 1590),  # 1,192,464 / 750 = 1589.95 -> 1590 (Anthropic's table: ~1590; before, resized to 1533)
    (1024, 768, 1049),   # 786,432 / 750 = 1048.6 -> 1049
    (784, 1568, 1640),   # the largest size the docs list as not resized: 1,229,312 / 750 = 1639.1 -> 1640
    # 4000x3000: scale min(1568/4000 = 0.392, sqrt(1,229,312/12,000,000) = 0.32007) -> 1280x960;
    # 1,228,800 / 750 = 1638.4 -> 1639
    (4000, 3000, 1639),
    (200, 200, 54),      # 40,000 / 750 = 53.3 -> 54
])
def test_anthropic_pixels_over_750(width, height, tokens):
    assert estimate(width, height, "anthropic").tokens == tokens


@pytest.mark.parametrize("family,width,height,tokens", [
    # Qwen2/2.5-VL: 1024x768 -> round to 28: 1036 (37) x 756 (27) = 999 patches, + 2 markers = 1001
    ("qwen-vl", 1024, 768, 1001),
    # 56x28 -> 56x28 = 1568 px < min 3136: beta = sqrt(2) -> ceil(1.41*28/28)=2 -> 56 high, ceil(2.83)=3 -> 84 wide;
    # 3x2 = 6 patches + 2 = 8
    ("qwen-vl", 56, 28, 8),
    # 448x448 -> 16x16 = 256 patches + 2 = 258
    ("qwen-vl", 448, 448, 258),
    # Qwen3-VL: 32-pixel patches: 1024x768 -> 32x24 = 768 + 2 = 770
    ("qwen3-vl", 1024, 768, 770),
])
def test_qwen_vl_patches_with_the_vision_markers(family, width, height, tokens):
    assert estimate(width, height, family).tokens == tokens


def test_gemma_is_a_fixed_count_whatever_the_size():
    assert {estimate(w, h, "gemma3").tokens for w, h in [(1, 1), (896, 896), (4000, 3000)]} == {256}


@pytest.mark.parametrize("names,family", [
    (("Qwen/Qwen2.5-VL-7B-Instruct",), "qwen-vl"), (("qwen3-vl-8b",), "qwen3-vl"), (("", "Qwen3.5-4B"), "qwen3-vl"),
    (("gemma-3-27b-it",), "gemma3"), (("claude-sonnet-4-5",), "anthropic"), (("gpt-4o-mini",), "openai"),
    (("o3-mini",), "openai"), (("llama-3.1-8b", "llama3"), "qwen-vl"),  # no rule: the 28x28 default
])
def test_the_family_comes_from_the_model_or_template_name(names, family):
    assert family_for(*names) == family


def test_every_estimate_says_how_and_is_labelled_estimate():
    for family in FAMILIES:
        found = estimate(640, 480, family)
        assert found.how and "estimate" in found.label and found.tokens > 0
    part = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}, "width": 1024, "height": 768,
            "format": "PNG"}
    assert image_label(part, "openai") == "[image 1024×768 PNG, ~765 tokens estimate]"
    assert "base64" not in image_label(part, "openai")


def test_a_part_without_a_usable_size_is_taken_as_448_and_says_so():
    for part in ({"type": "image_url", "image_url": {"url": "x"}},
                 {"type": "image_url", "width": True, "height": 10}, {"type": "image_url", "width": -5, "height": 9},
                 {"type": "image_url", "width": "wide", "height": 10}, {"type": "image_url", "width": 10 ** 9, "height": 1}):
        found = part_estimate(part, "qwen-vl")
        assert found.tokens == 258 and found.how.startswith("size unknown")


def test_text_only_templates_see_images_as_the_media_marker():
    messages = [{"role": "user", "content": [{"type": "text", "text": "Look: "}, {"type": "image_url", "image_url": {}}]},
                {"role": "assistant", "content": "ok"}]
    assert with_media_markers(messages)[0]["content"] == "Look: <__media__>"
    assert with_media_markers(messages)[1] == messages[1]
    assert with_media_markers([{"role": "user", "content": "plain"}]) is None
