"""A request body a client compressed (Content-Encoding): forwarded as it came, unpacked only for the recording.

The tap's own server hands the bytes over as they arrived (the pass-through must not change the request); this
unpacks a copy, never past a bound, so a small body that unpacks to gigabytes costs the recording nothing but a
line saying why it was not kept."""

from __future__ import annotations

import zlib

CHUNK = 1 << 16  # bytes fed to the decompressor at a time
MAX_CODINGS = 4  # layers of Content-Encoding read (clients send one)
GZIP_MAGIC = b"\x1f\x8b"


class NotUnpacked(ValueError):
    """Why a compressed body is not read for the recording (it was forwarded all the same)."""


def unpacked(raw: bytes, encoding: str, limit: int) -> bytes:
    """`raw` unpacked under the `Content-Encoding` it was sent with (gzip, deflate, or several, comma-separated, in
    the order applied); NotUnpacked for an unknown coding, a damaged stream, or an unpacked size past `limit`."""
    codings = [part.strip().lower() for part in encoding.split(",") if part.strip()]
    if len(codings) > MAX_CODINGS:  # each layer may unpack to `limit`: a long list is a way to stall, not a body
        raise NotUnpacked(f"its body names {len(codings)} codings; the tap reads at most {MAX_CODINGS}")
    body = raw
    for coding in reversed(codings):  # the last applied is undone first
        if coding == "identity":
            continue
        if coding in ("gzip", "x-gzip"):
            body = _inflate(body, zlib.MAX_WBITS | 16, limit)
        elif coding == "deflate":
            body = _deflate(body, limit)
        else:
            raise NotUnpacked(f"its body is compressed as {coding[:40]!r}, which the tap does not read")
    return body


def _deflate(raw: bytes, limit: int) -> bytes:
    """HTTP's deflate is zlib-wrapped; some clients send the raw stream: both are read."""
    try:
        return _inflate(raw, zlib.MAX_WBITS, limit)
    except NotUnpacked as wrapped:
        if "damaged" not in str(wrapped):
            raise
        return _inflate(raw, -zlib.MAX_WBITS, limit)


def _inflate(raw: bytes, window: int, limit: int) -> bytes:
    """One compressed stream, or (gzip) members one after another, unpacked within `limit` bytes in all."""
    out: list[bytes] = []
    size, rest = 0, raw
    while True:
        size, rest = _member(rest, window, limit, size, out)
        if not rest:
            return b"".join(out)
        if not window & 16 or rest[:2] != GZIP_MAGIC:  # gzip members one after another are one body
            raise NotUnpacked(f"its compressed body is damaged ({len(rest):,} bytes after its end)")


def _member(raw: bytes, window: int, limit: int, size: int, out: list[bytes]) -> tuple[int, bytes]:
    """Unpack one stream from the start of `raw` into `out`: (the size unpacked so far, the bytes after it)."""
    decompressor = zlib.decompressobj(window)
    try:
        for start in range(0, len(raw), CHUNK):
            data = raw[start:start + CHUNK]
            while data:
                piece = decompressor.decompress(data, limit + 1 - size)
                size += len(piece)
                out.append(piece)
                if size > limit:
                    raise NotUnpacked(f"its compressed body unpacks past the tap's limit of {limit:,} bytes")
                if decompressor.eof:
                    return size, decompressor.unused_data + raw[start + CHUNK:]
                data = decompressor.unconsumed_tail
        out.append(decompressor.flush())
    except zlib.error as exc:
        raise NotUnpacked(f"its compressed body is damaged ({exc})") from None
    if not decompressor.eof:
        raise NotUnpacked("its compressed body is damaged (it ends early)")
    return size, decompressor.unused_data
