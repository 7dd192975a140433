"""Minimal valid image files written by hand (no image library): PNG, JPEG, GIF and WebP headers."""

from __future__ import annotations

import struct
import zlib


def png(width: int, height: int) -> bytes:
    """A real PNG: signature, IHDR, one IDAT of black RGB rows, IEND (each chunk with its CRC)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    rows = b"".join(b"\x00" + b"\x00" * width * 3 for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def png_header(width: int, height: int) -> bytes:
    """Only the signature and an IHDR declaring `width` x `height` (for hostile sizes: no pixels)."""
    data = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + struct.pack(">I", len(data)) + b"IHDR" + data
            + struct.pack(">I", zlib.crc32(b"IHDR" + data) & 0xFFFFFFFF))


def jpeg(width: int, height: int) -> bytes:
    """SOI, an APP0 (JFIF) segment, a baseline SOF0 frame header with the size, EOI: enough to read the size."""
    app0 = b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    sof = struct.pack(">BHHB", 8, height, width, 3) + b"\x01\x11\x00\x02\x11\x00\x03\x11\x00"
    return (b"\xff\xd8" + b"\xff\xe0" + struct.pack(">H", len(app0) + 2) + app0
            + b"\xff\xc0" + struct.pack(">H", len(sof) + 2) + sof + b"\xff\xd9")


def gif(width: int, height: int) -> bytes:
    return b"GIF89a" + struct.pack("<HHBBB", width, height, 0, 0, 0) + b";"


def webp_lossless(width: int, height: int) -> bytes:
    bits = (width - 1) | ((height - 1) << 14)
    body = b"VP8L" + struct.pack("<I", 5) + b"\x2f" + struct.pack("<I", bits)
    return b"RIFF" + struct.pack("<I", 4 + len(body)) + b"WEBP" + body
