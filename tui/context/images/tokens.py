"""Image tokens per model family, estimated from the pixel size (labelled estimate everywhere).

One table, as data: how each family turns an image into prompt tokens, and the placeholder its chat
template writes for one. Worked examples with the arithmetic are in tests/test_image_tokens.py.

- openai: high detail fits the image in 2048x2048, then scales the shortest side down to 768, and
  counts 512-pixel tiles: 85 + 170 x tiles; low detail is 85 whatever the size.
- anthropic: the image is scaled to fit 1568 pixels on its long side and about 1.23 megapixels (the largest
  size Anthropic's vision docs list as not resized, 784x1568; their 1092x1092 costs ~1,590 tokens, so the
  ~1.15 megapixels quoted elsewhere is too small), then costs width x height / 750 tokens.
- qwen-vl (Qwen2-VL, Qwen2.5-VL): the size is rounded to multiples of 28 within min/max pixels, one
  token per 28x28 patch, plus the two vision markers around them.
- qwen3-vl (Qwen3-VL, Qwen3.5): the same with 32x32 patches (16-pixel patches merged 2x2).
- gemma3: a fixed 256 tokens per image (the image is resized to 896x896).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache
from struct import error as struct_error
from typing import Required, TypedDict

from tui.context.images.files import MAX_SIDE, ImageFileError, image_size
from tui.context.json_types import JSONObject, WireMessage

ESTIMATE = "estimate"


class ImageRule(TypedDict, total=False):
    """How one family counts an image: the keys its arithmetic (estimate) reads, the label and placeholders always."""

    label: Required[str]
    placeholders: Required[tuple[str, ...]]
    fit: int  # openai: the image is fitted in fit x fit, its short side scaled to short_side, cut in tiles
    short_side: int
    tile: int
    base: int
    per_tile: int
    long_side: int  # anthropic: scaled to long_side and max_pixels, then pixels / divisor
    divisor: int
    factor: int  # qwen: patches of factor x factor within min_pixels..max_pixels, plus markers
    min_pixels: int
    max_pixels: int
    markers: int
    fixed: int  # gemma3: the same count for every image


FAMILIES: dict[str, ImageRule] = {
    "openai": {"label": "OpenAI tiles (85 + 170 x tiles)", "fit": 2048, "short_side": 768, "tile": 512,
               "base": 85, "per_tile": 170, "placeholders": ()},
    "anthropic": {"label": "Anthropic (w x h / 750)", "long_side": 1568, "max_pixels": 784 * 1568, "divisor": 750,
                  "placeholders": ()},
    "qwen-vl": {"label": "Qwen-VL 28x28 patches + 2 vision markers", "factor": 28, "min_pixels": 56 * 56,
                "max_pixels": 12_845_056, "markers": 2,
                "placeholders": ("<|vision_start|>", "<|image_pad|>", "<|vision_end|>")},
    "qwen3-vl": {"label": "Qwen3-VL 32x32 patches + 2 vision markers", "factor": 32, "min_pixels": 256 * 256,
                 "max_pixels": 16_777_216, "markers": 2,
                 "placeholders": ("<|vision_start|>", "<|image_pad|>", "<|vision_end|>")},
    "gemma3": {"label": "Gemma 3 (fixed 256 per image)", "fixed": 256,
               "placeholders": ("<start_of_image>", "<|image|>", "<image_soft_token>")},
}
DEFAULT_FAMILY = "qwen-vl"
# Which family a model or template name belongs to: the first pattern that matches wins.
NAME_RULES: tuple[tuple[str, str], ...] = (
    (r"qwen3[._-]?(vl|5|\.5)", "qwen3-vl"), (r"qwen.*vl|qvq|mimo-vl", "qwen-vl"),
    (r"gemma", "gemma3"), (r"claude|anthropic", "anthropic"),
    (r"gpt-?[45]|chatgpt|\bo[134]\b|\bo[134][-_]|openai", "openai"),
)
# What llama.cpp's server writes in the text for an image part before it renders a template that takes
# text only (mtmd's default marker); the server puts the image's tokens in its place.
MEDIA_MARKER = "<__media__>"


@dataclass(frozen=True)
class ImageEstimate:
    tokens: int
    family: str
    width: int  # the size the family resizes the image to before counting
    height: int
    how: str  # the arithmetic, for the user

    @property
    def label(self) -> str:
        return f"~{self.tokens} tokens {ESTIMATE} ({FAMILIES[self.family]['label']})"


def family_for(*names: str) -> str:
    """The image family of a model or template name (the first name that matches a rule), else the default."""
    for name in names:
        lowered = (name or "").lower()
        for pattern, family in NAME_RULES:
            if re.search(pattern, lowered):
                return family
    return DEFAULT_FAMILY


def part_size(part: JSONObject) -> tuple[int, int] | None:
    """The pixel size of an image part: read from the header of its data: URL (a bounded start of it, decoded
    once) when it has one, since a stated size may lie; else the size it states (ours, beside or inside
    `image_url`); None when neither says."""
    found = data_url_image(_data_url_head(part))
    if found:
        return found[1:]
    inner = _inner(part)
    sizes: list[int] = []
    for key in ("width", "height"):
        value = part.get(key, inner.get(key))
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_SIDE:
            return None
        sizes.append(value)
    return sizes[0], sizes[1]


def _inner(part: JSONObject) -> JSONObject:
    """An image part's `image_url` object, or {} when it has none (or a bare URL there)."""
    inner = part.get("image_url")
    return inner if isinstance(inner, dict) else {}


def _data_url_head(part: JSONObject) -> str:
    """The start of an image part's data: URL (as `image_url.url`, or `image_url` itself), or ''."""
    inner = part.get("image_url")
    url = inner.get("url") if isinstance(inner, dict) else inner
    if not isinstance(url, str) or not url.startswith("data:"):
        return ""
    head = url[:HEADER_CHARS + 4096]
    return head if "\n" not in head and "\r" not in head else "".join(head.split())[:HEADER_CHARS]


HEADER_CHARS = 128 * 1024  # base64 characters of a data: URL read for its size (96 KB: past a JPEG's metadata)


@lru_cache(maxsize=256)
def data_url_image(head: str) -> tuple[str, int, int] | None:
    """The format and pixel size in the header of a base64 data: URL's start, or None (not base64, not an image
    we read, a header that lies or is cut short: such an image is counted at the assumed size, and said so)."""
    import base64
    import binascii

    meta, comma, payload = head.partition(",")
    if not comma or not meta.endswith(";base64"):
        return None
    payload = payload[:HEADER_CHARS]
    payload = payload[: len(payload) - len(payload) % 4]
    try:
        kind, width, height = image_size(base64.b64decode(payload, validate=False))
    except (ImageFileError, binascii.Error, ValueError, IndexError, struct_error):
        return None
    return (kind, width, height) if 1 <= width <= MAX_SIDE and 1 <= height <= MAX_SIDE else None


def part_detail(part: JSONObject) -> str:
    inner = _inner(part)
    return "low" if inner.get("detail", part.get("detail")) == "low" else "high"


def estimate(width: int, height: int, family: str, detail: str = "high") -> ImageEstimate:
    """Prompt tokens of one width x height image for `family` (a key of FAMILIES)."""
    width, height = max(1, min(int(width), MAX_SIDE)), max(1, min(int(height), MAX_SIDE))
    rule = FAMILIES[family]
    if family == "openai":
        return _openai(width, height, rule, detail)
    if family == "anthropic":
        scale = min(1.0, rule["long_side"] / max(width, height), math.sqrt(rule["max_pixels"] / (width * height)))
        w, h = max(1, int(width * scale)), max(1, int(height * scale))
        tokens = math.ceil(w * h / rule["divisor"])
        return ImageEstimate(tokens, family, w, h, f"{w}x{h} / {rule['divisor']} = {tokens}")
    if "fixed" in rule:
        return ImageEstimate(rule["fixed"], family, width, height, f"fixed {rule['fixed']} per image")
    h, w = _smart_resize(height, width, rule["factor"], rule["min_pixels"], rule["max_pixels"])
    patches = (h // rule["factor"]) * (w // rule["factor"])
    tokens = patches + rule["markers"]
    return ImageEstimate(tokens, family, w, h, f"{w}x{h}: {w // rule['factor']}x{h // rule['factor']} patches "
                                               f"= {patches}, + {rule['markers']} markers = {tokens}")


def _openai(width: int, height: int, rule: ImageRule, detail: str) -> ImageEstimate:
    if detail == "low":
        return ImageEstimate(rule["base"], "openai", width, height, f"low detail: {rule['base']}")
    w, h = float(width), float(height)
    if max(w, h) > rule["fit"]:
        scale = rule["fit"] / max(w, h)
        w, h = w * scale, h * scale
    if min(w, h) > rule["short_side"]:
        scale = rule["short_side"] / min(w, h)
        w, h = w * scale, h * scale
    w_i, h_i = max(1, int(w)), max(1, int(h))
    tiles = math.ceil(w_i / rule["tile"]) * math.ceil(h_i / rule["tile"])
    tokens = rule["base"] + rule["per_tile"] * tiles
    return ImageEstimate(tokens, "openai", w_i, h_i,
                         f"{w_i}x{h_i}: {tiles} tiles of {rule['tile']}: {rule['base']} + {rule['per_tile']} x {tiles}"
                         f" = {tokens}")


def _smart_resize(height: int, width: int, factor: int, min_pixels: int, max_pixels: int) -> tuple[int, int]:
    """Round to multiples of `factor`, then scale into [min_pixels, max_pixels] keeping the aspect."""
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def part_estimate(part: JSONObject, family: str) -> ImageEstimate:
    """One image part's estimate; a part without a usable size is taken as 448x448 (said in `how`)."""
    size = part_size(part)
    found = estimate(*(size or (448, 448)), family, part_detail(part))
    if size is None:
        return ImageEstimate(found.tokens, found.family, found.width, found.height,
                             "size unknown, 448x448 assumed: " + found.how)
    return found


def image_label(part: JSONObject, family: str) -> str:
    """The short label shown for an image part instead of its data (never the base64 blob)."""
    size = part_size(part)
    kind = part_format(part) or "image"
    shown = f"{size[0]}×{size[1]}" if size else "size unknown"
    return f"[image {shown} {kind}, ~{part_estimate(part, family or DEFAULT_FAMILY).tokens} tokens estimate]"


def part_format(part: JSONObject) -> str:
    """PNG, JPEG, GIF or WebP: what the part says, else what its data: URL's header shows; '' when unknown."""
    stated = part.get("format")
    if isinstance(stated, str) and stated in ("PNG", "JPEG", "GIF", "WebP"):
        return stated
    found = data_url_image(_data_url_head(part))
    return found[0] if found else ""


def placeholders(family: str) -> tuple[str, ...]:
    rule = FAMILIES.get(family)
    return rule["placeholders"] if rule is not None else ()


ANY_PLACEHOLDER = tuple(dict.fromkeys(p for rule in FAMILIES.values() for p in rule["placeholders"]))


def with_media_markers(messages: list[WireMessage]) -> list[WireMessage] | None:
    """Messages with every list content flattened to text, each image part its MEDIA_MARKER (None if none has
    parts): how a server hands parts to a template that reads content as text."""
    if not any(isinstance(m.get("content"), list) for m in messages):
        return None
    flat: list[WireMessage] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            pieces = [MEDIA_MARKER if isinstance(p, dict) and p.get("type") in ("image_url", "image", "input_image")
                      else str(p.get("text", "")) if isinstance(p, dict) else "" for p in content]
            message = {**message, "content": "".join(pieces)}
        flat.append(message)
    return flat
