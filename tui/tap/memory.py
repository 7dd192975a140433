"""Giving the memory of a large reply back to the system once the tap has let go of it.

A reply of many megabytes passes through the tap as many pieces (its chunks, the text joined from them, the events
read from it), all freed once it is recorded; but glibc's allocator keeps freed memory in its heaps for later, and a
heap with anything still in use near its top is never shrunk: the tap stayed at hundreds of megabytes while idle.
`malloc_trim` hands the free pages of every heap back. Elsewhere (no glibc) nothing is done.
"""

from __future__ import annotations

import ctypes
import sys

TRIM_AFTER = 4 * 1024 * 1024  # bytes of a reply after which its memory is handed back (smaller ones are reused)

_trim = None  # malloc_trim, once looked up (False: there is none)


def _malloc_trim():
    global _trim
    if _trim is None:
        _trim = False
        if sys.platform.startswith("linux"):
            try:
                _trim = getattr(ctypes.CDLL(None), "malloc_trim", None) or False
            except OSError:
                pass
    return _trim


def give_back() -> bool:
    """Hand the allocator's free memory back to the system; whether it could be asked."""
    trim = _malloc_trim()
    if not trim:
        return False
    trim(0)
    return True
