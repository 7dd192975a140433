"""Image files as the engine sees them: the format from the magic bytes, the pixel size from the header.

No image library: each format's header is read by hand, bounded, and every malformed file is one
clear line (ImageFileError), never a crash. Only the size is read; the pixels are sent as they are.
"""

from __future__ import annotations

import base64
import struct

from tui.context.json_types import JSONObject

IMAGE_LIMIT = 20 * 1024 * 1024  # bytes of one image file
# Pixels one image may declare: past this, image libraries refuse to decode it (a decompression bomb).
MAX_PIXELS = 178_956_970
MAX_SIDE = 100_000  # pixels: a larger declared size is a corrupt or hostile header
MIME = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WebP": "image/webp"}


class ImageFileError(ValueError):
    """An image that cannot be attached: corrupt, oversized or of an unsupported format; one line."""


def image_format(data: bytes) -> str | None:
    """PNG, JPEG, GIF or WebP from the magic bytes, else None."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "PNG"
    if data.startswith(b"\xff\xd8\xff"):
        return "JPEG"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "GIF"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "WebP"
    return None


def looks_like_image(data: bytes) -> bool:
    return image_format(data) is not None


def image_size(data: bytes) -> tuple[str, int, int]:
    """(format, width, height) read from the header; ImageFileError when it is not a sane image."""
    kind = image_format(data)
    if kind is None:
        raise ImageFileError("not a PNG, JPEG, GIF or WebP image (unknown magic bytes)")
    try:
        width, height = {"PNG": _png, "JPEG": _jpeg, "GIF": _gif, "WebP": _webp}[kind](data)
    except (struct.error, IndexError):
        raise ImageFileError(f"corrupt {kind} image: its header is truncated") from None
    if width < 1 or height < 1:
        raise ImageFileError(f"corrupt {kind} image: it declares {width}x{height} pixels")
    if width > MAX_SIDE or height > MAX_SIDE:
        raise ImageFileError(f"{kind} image declares {width}x{height} pixels: over {MAX_SIDE} on a side")
    if width * height > MAX_PIXELS:
        raise ImageFileError(f"{kind} image declares {width}x{height} = {width * height} pixels: over the "
                             f"{MAX_PIXELS} an image library decodes")
    return kind, width, height


def _png(data: bytes) -> tuple[int, int]:
    if data[12:16] != b"IHDR":
        raise ImageFileError("corrupt PNG image: no IHDR chunk first")
    return struct.unpack(">II", data[16:24])


def _gif(data: bytes) -> tuple[int, int]:
    return struct.unpack("<HH", data[6:10])


def _webp(data: bytes) -> tuple[int, int]:
    chunk = data[12:16]
    if chunk == b"VP8X":
        width = 1 + int.from_bytes(data[24:27], "little")
        height = 1 + int.from_bytes(data[27:30], "little")
        if len(data) < 30:
            raise struct.error
        return width, height
    if chunk == b"VP8L":
        if data[20] != 0x2F:
            raise ImageFileError("corrupt WebP image: bad lossless signature")
        bits = int.from_bytes(data[21:25], "little")
        if len(data) < 25:
            raise struct.error
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8 ":
        if data[23:26] != b"\x9d\x01\x2a":
            raise ImageFileError("corrupt WebP image: bad key frame start code")
        width, height = struct.unpack("<HH", data[26:30])
        return width & 0x3FFF, height & 0x3FFF
    raise ImageFileError("unsupported WebP image: no VP8, VP8L or VP8X chunk")


# JPEG start-of-frame markers (baseline, progressive, lossless...); not DHT (C4), JPG (C8) nor DAC (CC).
SOF = frozenset({0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF})


JPEG_SCAN = 4 * 1024 * 1024  # bytes searched for the frame header (metadata segments come first, 64 KB each)


def _jpeg(data: bytes) -> tuple[int, int]:
    position = 2
    while position < min(len(data), JPEG_SCAN):
        if data[position] != 0xFF:
            raise ImageFileError("corrupt JPEG image: a segment does not start with 0xFF")
        marker = data[position + 1]
        if marker == 0xFF:  # fill byte
            position += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:  # markers without a length
            position += 2
            continue
        if marker in (0xD9, 0xDA):
            break  # end of image or start of scan before any frame header
        length = struct.unpack(">H", data[position + 2:position + 4])[0]
        if length < 2:
            raise ImageFileError("corrupt JPEG image: a segment length under 2")
        if marker in SOF:
            height, width = struct.unpack(">HH", data[position + 5:position + 9])
            return width, height
        position += 2 + length
    raise ImageFileError("corrupt JPEG image: no frame header (SOF) before the image data")


def data_url(data: bytes, kind: str) -> str:
    return f"data:{MIME[kind]};base64," + base64.b64encode(data).decode("ascii")


def image_part(data: bytes, name: str = "") -> JSONObject:
    """An `image_url` content part for the file's bytes, with its pixel size kept for counting."""
    if len(data) > IMAGE_LIMIT:
        raise ImageFileError(f"image is {len(data)} bytes: over the {IMAGE_LIMIT // (1024 * 1024)} MB limit")
    kind, width, height = image_size(data)
    part: JSONObject = {"type": "image_url", "image_url": {"url": data_url(data, kind)}, "width": width,
                        "height": height, "format": kind}
    if name:
        part["name"] = name[:200]
    return part
