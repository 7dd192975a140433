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


# (ids of their own, and gzip without a time stamp: pytest-xdist's workers must collect the same test names)
@pytest.mark.parametrize(("raw", "coding", "said"), [
    (b"anything", "br", "compressed as 'br'"),
    (gzip.compress(BODY, mtime=0)[:-12], "gzip", "damaged"),
    (b"not gzip at all", "gzip", "damaged"),
    (gzip.compress(b"x" * 5_000_000, mtime=0), "gzip", "unpacks past the tap's limit of 1,000,000 bytes"),
], ids=["unknown coding", "cut short", "not gzip", "bomb"])
def test_a_body_the_tap_cannot_or_will_not_unpack_says_why(raw, coding, said):
    with pytest.raises(NotUnpacked, match=said.replace("(", r"\(").replace(")", r"\)")):
        unpacked(raw, coding, 1_000_000)


def test_gzip_members_one_after_another_are_one_body_and_bytes_after_the_end_are_damage():
    assert unpacked(gzip.compress(BODY[:100]) + gzip.compress(BODY[100:]), "gzip", 10**6) == BODY
    with pytest.raises(NotUnpacked, match="bytes after its end"):
        unpacked(gzip.compress(BODY) + b"junk", "gzip", 10**6)
    with pytest.raises(NotUnpacked, match="unpacks past"):  # the members' sum is bounded, not each alone
        unpacked(gzip.compress(b"x" * 600_000) + gzip.compress(b"x" * 600_000), "gzip", 1_000_000)


def test_a_long_list_of_codings_is_refused_before_any_is_undone():
    layered = BODY
    for _layer in range(5):
        layered = gzip.compress(layered)
    with pytest.raises(NotUnpacked, match="names 5 codings; the tap reads at most 4"):
        unpacked(layered, ", ".join(["gzip"] * 5), 10**6)


@pytest.mark.bulk
def test_thousands_of_tiny_gzip_members_are_read_without_recursion():
    members = b"".join(gzip.compress(b"{}"[i % 2:i % 2 + 1]) for i in range(20_000))
    assert unpacked(members, "gzip", 10**6) == b"{}" * 10_000
