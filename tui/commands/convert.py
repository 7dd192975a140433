"""`ctxpane convert FILE...`: session files of version 1 (one JSON object) rewritten as version 2, in place.

Each file's old bytes are kept beside it first (`<name>.v1.bak`), then the new file replaces it atomically: at every
moment one of the two holds the session whole. A file of version 2 already is left as it is, and said.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from tui.commands.arguments import QuietParser
from tui.context.untrusted.visible import visible
from tui.errors import UsageError
from tui.sessions.store import SessionFileError, SessionLock, SessionLocked, convert_session, followed_link


def build_parser() -> argparse.ArgumentParser:
    parser = QuietParser(prog="ctxpane convert",
                         description="Convert session files of version 1 to version 2, in place, with a backup.")
    parser.add_argument("files", nargs="+", help="session files (.ctxpane.json)")
    return parser


def run(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    for name in args.files:
        path = followed_link(Path(name).expanduser()) or Path(name)  # (the app's lock is beside the file itself)
        lock = SessionLock(path)
        try:
            lock.acquire()  # never under an app that has it open
        except SessionLocked as exc:
            raise UsageError(str(exc)) from None
        try:
            backup = convert_session(path)
        except SessionFileError as exc:
            raise UsageError(str(exc)) from None
        except OSError as exc:
            raise UsageError(f"cannot convert {path}: {exc.strerror or exc}") from None
        finally:
            lock.release()
        if backup is None:
            print(visible(f"{path}: version 2 already, left as it is"))
        else:
            print(visible(f"{path}: converted (the old file is kept as {backup.name})"))
    return 0
