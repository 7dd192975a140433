"""A compressed request body unpacked for the recording only: every coding the tap reads, and every way it refuses."""

from __future__ import annotations

import gzip
import zlib

import pytest

from tui.tap.encoded import NotUnpacked, unpacked

BODY = b'{"messages": [{"role": "user", "content": "hi"}]}' * 100


def test_gzip_deflate_raw_deflate_and_stacked_codings_unpack():
    raw_deflate = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    assert unpacked(gzip.compress(BODY), "gzip", 10**6) == BODY
    assert unpacked(zlib.compress(BODY), "Deflate", 10**6) == BODY
    assert unpacked(raw_deflate.compress(BODY) + raw_deflate.flush(), "deflate", 10**6) == BODY
    assert unpacked(gzip.compress(zlib.compress(BODY)), "deflate, gzip", 10**6) == BODY
    assert unpacked(BODY, "identity", 10**6) == BODY


@pytest.mark.parametrize(("raw", "coding", "said"), [
    (b"anything", "br", "compressed as 'br'"),
    (gzip.compress(BODY)[:-12], "gzip", "damaged"),
    (b"not gzip at all", "gzip", "damaged"),
    (gzip.compress(b"x" * 5_000_000), "gzip", "unpacks past the tap's limit of 1,000,000 bytes"),
])
def test_a_body_the_tap_cannot_or_will_not_unpack_says_why(raw, coding, said):
    with pytest.raises(NotUnpacked, match=said.replace("(", r"\(").replace(")", r"\)")):
        unpacked(raw, coding, 1_000_000)
