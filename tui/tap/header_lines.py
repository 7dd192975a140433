"""The tap's header lines and log lines that come from outside: an upstream's header values as aiohttp can write them
back byte for byte, and aiohttp's own reports of requests it refused, which quote the raw request (a key in it too)."""

from __future__ import annotations

import logging
import re

log = logging.getLogger("ctxpane.tap")
UNSENDABLE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")  # in a header: what aiohttp refuses to write


class ParserRefusals(logging.Filter):
    """aiohttp's own report of a request its HTTP parser refused (a 400 it answers itself) is a traceback that quotes
    the raw request line or header, a key in it too: it becomes one line naming only the kind of error."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info or record.name.startswith("aiohttp"):
            error = record.exc_info[1] if record.exc_info else None
            record.msg = ("a request the HTTP parser refused (%s): answered 400, not forwarded, not recorded"
                          if error is not None else "the HTTP server: %s")
            record.args = (type(error).__name__,) if error is not None else (record.levelname.lower(),)
            record.exc_info, record.exc_text, record.stack_info = None, None, None
        return True


def sendable_headers(raw: list[tuple[bytes, bytes]], number: int) -> list[tuple[str, str]]:
    """An upstream's header lines as aiohttp writes them back byte for byte: it writes a value as UTF-8, so each is
    read as UTF-8 (httpx's reading of the whole set as Latin-1, once one value was not UTF-8, had them encoded
    twice). A value no UTF-8 reading holds, or with a control character, cannot be sent as it came: left out, said."""
    kept = []
    for key_bytes, value_bytes in raw:
        key = key_bytes.decode("latin-1")
        try:
            value = value_bytes.decode("utf-8")
        except UnicodeDecodeError:
            log.warning("request %d: left out a header of the upstream's answer that is not UTF-8 (the tap can send "
                        "it on only as UTF-8): %s", number, ascii(key[:60]))
            continue
        if UNSENDABLE.search(key) or UNSENDABLE.search(value):  # aiohttp would refuse the whole answer
            log.warning("request %d: left out a header of the upstream's answer holding a control character: %s",
                        number, ascii(key[:60]))
            continue
        kept.append((key, value))
    return kept
