"""`ctxpane import FILE [-o SESSION]`: a request body or a JSONL of messages becomes a session file."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tui.commands.inputs import MAX_INPUT_BYTES
from tui.commands.arguments import QuietParser
from tui.context.formats.kinds import KINDS
from tui.context.untrusted.visible import visible
from tui.errors import UsageError, one_line
from tui.sessions.safe_io import SessionFileError, read_regular_file
from tui.sessions.store import save_session, session_path
from tui.sessions.transfer import Imported, TransferError, import_file


def build_parser() -> argparse.ArgumentParser:
    parser = QuietParser(prog="ctxpane import", description="Import a request body (chat completions, Anthropic Messages, "
                                                            "OpenAI Responses) or a JSONL of messages.")
    parser.add_argument("file", help="a request body (.json: every parameter is kept, but stream and credentials) "
                                     "or one message per line (.jsonl)")
    parser.add_argument("-o", "--output", default=None, help="session file to write (default: the sessions folder)")
    parser.add_argument("--format", choices=KINDS, default=None, dest="wire",
                        help="the body's API: chat, messages (Anthropic) or responses (OpenAI); default: told by its "
                             "fields")
    return parser


def run(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    path = Path(args.file).expanduser()
    try:
        raw = read_regular_file(path, MAX_INPUT_BYTES)
        imported = exported_session(path, raw) or import_file(path, raw, args.wire)
    except (TransferError, SessionFileError) as exc:
        raise UsageError(str(exc)) from None
    session = imported.session
    target = Path(args.output).expanduser() if args.output else session_path(session)
    if os_exists(target):
        raise UsageError(f"{target} exists already: choose another --output")
    try:
        save_session(session, target)
    except OSError as exc:
        raise UsageError(f"cannot write {target}: {exc.strerror or exc}") from None
    if imported.left_out:
        print(one_line(f"ctxpane import: not kept: {', '.join(imported.left_out)}"), file=sys.stderr)
    print(visible(str(target)))
    return 0


def exported_session(path: Path, raw: bytes) -> Imported | None:
    """A session as `ctxpane export --format json` writes it (or a session file of either version): read through
    the session schema, to be written as a new file of this version. None when `raw` is not one."""
    from tui.sessions.parse import decode_session
    from tui.sessions.session_log import is_log
    from tui.sessions.store import load_session

    if not is_log(raw) and b'"ctxpane-session"' not in raw[:4096]:
        return None
    if is_log(raw):
        return Imported(load_session(path).session)
    from tui.sessions.model import SessionFormatError

    try:
        session, _version = decode_session(raw)
    except SessionFormatError as exc:
        raise TransferError(f"{path}: {exc}") from None
    return Imported(session)


def os_exists(path: Path) -> bool:
    """Whether anything is at `path`, a dangling symlink included; a folder we cannot search counts as no."""
    try:
        path.lstat()
    except OSError:
        return False
    return True
