"""`ctxpane import FILE [-o SESSION]`: a request body or a JSONL of messages becomes a session file."""

from __future__ import annotations

import argparse
from pathlib import Path

from tui.commands.inputs import MAX_INPUT_BYTES
from tui.commands.render import QuietParser
from tui.errors import UsageError
from tui.sessions.store import save_session, session_path
from tui.sessions.transfer import TransferError, import_file


def build_parser() -> argparse.ArgumentParser:
    parser = QuietParser(prog="ctxpane import", description="Import a chat-completions body or a JSONL of messages.")
    parser.add_argument("file")
    parser.add_argument("-o", "--output", default=None, help="session file to write (default: the sessions folder)")
    return parser


def run(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    path = Path(args.file).expanduser()
    if not path.is_file():
        raise UsageError(f"{args.file} is not a file" if path.exists() else f"file not found: {args.file}")
    try:
        if path.stat().st_size > MAX_INPUT_BYTES:
            raise UsageError(f"{args.file} is too large to import")
        session = import_file(path, path.read_text(encoding="utf-8"))
    except (TransferError, UnicodeDecodeError) as exc:
        raise UsageError(str(exc) if isinstance(exc, TransferError) else f"{args.file} is not UTF-8 text") from None
    except PermissionError:
        raise UsageError(f"cannot read {args.file}: permission denied") from None
    target = Path(args.output).expanduser() if args.output else session_path(session)
    if target.exists():
        raise UsageError(f"{target} exists already: choose another --output")
    save_session(session, target)
    print(target)
    return 0
