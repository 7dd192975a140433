"""`ctxpane export FILE --format markdown|request|curl|document|json [--step N] [-o OUT]`.

`json` is the whole session as one readable JSON object (version 1's layout, every request's body whole), which
`ctxpane import` reads back."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tui.commands.arguments import STEP, QuietParser, whole_number
from tui.commands.inputs import open_session
from tui.commands.sessions_common import session_engine, template_failures
from tui.commands.terminal import write_text
from tui.context.formats.kinds import KINDS, FormatKind
from tui.context.untrusted.visible import visible
from tui.errors import UsageError
from tui.sessions.replay import Replayer
from tui.sessions.safe_io import write_private
from tui.sessions.store import SUFFIX, SessionLocked, held
from tui.sessions.transfer import (TransferError, converted_request, export_curl, export_markdown, export_request,
                                   step_record)

FORMATS = ("markdown", "request", "curl", "document", "json", "chat", "messages", "responses")  # the last three:
# the request written in that API's format (chat completions, Anthropic Messages, OpenAI Responses)


def build_parser() -> argparse.ArgumentParser:
    parser = QuietParser(prog="ctxpane export", description="Export a session or one of its requests.")
    parser.add_argument("file", help="a session file")
    parser.add_argument("--format", choices=FORMATS, default="markdown")
    parser.add_argument("--step", type=whole_number(*STEP), default=None, metavar="N",
                        help="which request, from 1 (default: the last)")
    parser.add_argument("--api-key-env", default="OPENAI_API_KEY", help="variable named in the curl command")
    parser.add_argument("-o", "--output", default=None, help="write here instead of standard output")
    return parser


def write_output(target: Path, source: Path, text: str) -> None:
    """The export written to `target` (0600, like the session it comes from). Over a session file (the one read,
    or any other) only under that session's lock: an app writing it would lose its next save, or write after it."""
    if target.name.endswith(SUFFIX) or (target.exists() and same_file(target, source)):
        with held(target) as path:
            write_private(path, text)
        return
    write_private(target, text)


def same_file(one: Path, other: Path) -> bool:
    try:
        return one.samefile(other)
    except OSError:
        return False


def run(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    session = open_session(args.file).session
    try:
        if args.format == "markdown":
            text = export_markdown(session)
        elif args.format == "request":
            text = export_request(session, args.step)
        elif args.format in KINDS:
            text, left = converted_request(session, args.step, args.format)
            if left:  # said, not dropped silently: a previous_response_id carried the context the server held
                print(visible(f"ctxpane: note: written as a {FormatKind(args.format).title} body without "
                              f"{', '.join(left)[:300]} (it has no such field)"), file=sys.stderr)
        elif args.format == "curl":
            text = export_curl(session, args.step, args.api_key_env)
        elif args.format == "json":
            from tui.sessions.store import session_text

            text = session_text(session)
        else:
            record = step_record(session, args.step)
            template, tokenizer = session_engine(session)
            index = session.requests.index(record)
            with template_failures(f"{args.file}: step {index + 1}", template.name):
                text = Replayer(session, template, tokenizer).step(index, check_drift=False).snapshot.document.text
    except TransferError as exc:
        raise UsageError(str(exc)) from None
    if args.format != "document" and not text.endswith("\n"):
        text += "\n"  # the document is written exactly as sent, with no newline added
    if args.output:
        try:
            write_output(Path(args.output).expanduser(), Path(args.file).expanduser(), text)
        except SessionLocked as exc:
            raise UsageError(f"not written: {exc}") from None
        except OSError as exc:
            raise UsageError(f"cannot write {args.output}: {exc.strerror or exc}") from None
    else:
        write_text(text)  # exact to a pipe; stand-ins on a terminal
    return 0
