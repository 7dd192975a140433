"""`ctxpane tap --upstream URL`: a local proxy that shows and records what another program sends."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

from tui.context.cache.rules import shown_figure
from tui.commands.arguments import QuietParser, whole_number
from tui.errors import UsageError, one_line
from tui.context.untrusted.visible import visible

MAX_BODY = (1024, 2 ** 31)


def build_parser() -> argparse.ArgumentParser:
    parser = QuietParser(prog="ctxpane tap", description="Proxy an OpenAI-compatible server and show (and record) "
                                                         "every request another program sends through it.")
    parser.add_argument("--upstream", required=True, help="the server to forward to, e.g. http://127.0.0.1:8080/v1")
    parser.add_argument("--port", type=whole_number(0, 65535), default=8089, help="port to listen on (default 8089)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this "
                                                            "machine only)")
    parser.add_argument("--session-dir", default=None, metavar="DIR",
                        help="where each conversation's session file goes (default: the sessions folder)")
    parser.add_argument("--max-body", type=whole_number(*MAX_BODY), default=32 * 1024 * 1024, metavar="BYTES",
                        help="largest request body accepted; larger ones get 413 (default 33554432, 32 MiB)")
    parser.add_argument("--no-ui", action="store_true", help="no app: proxy and record, one line per request")
    return parser


@dataclass(frozen=True)
class TapInApp:
    """What `ctxpane tap` asks of the CLI: open the app in tap mode (the commands never import the app)."""

    upstream: str
    host: str
    port: int
    folder: Path
    max_body: int


def run(argv: list[str]) -> int | TapInApp:
    args = build_parser().parse_args(argv)
    from tui.tap.runner import is_loopback
    from tui.tap.server import UpstreamError, upstream_parts

    try:
        upstream_parts(args.upstream)
    except UpstreamError as exc:
        raise UsageError(str(exc)) from None
    if forwards_to_itself(args.upstream, args.host, args.port):
        raise UsageError(f"--upstream {args.upstream} is the tap's own address: every request would come back "
                         "to it; point it at the server")
    if not is_loopback(args.host):
        print(one_line(f"ctxpane tap: warning: listening on {args.host}, not only on this machine: anyone who "
                       "reaches it can use your upstream (with the keys their requests carry) and their requests "
                       "are recorded here"), file=sys.stderr)
    folder = Path(args.session_dir).expanduser() if args.session_dir else default_folder()
    usable_folder(folder)
    if args.no_ui:
        return asyncio.run(headless(args.upstream, args.host, args.port, folder, args.max_body))
    return TapInApp(args.upstream, args.host, args.port, folder, args.max_body)


def forwards_to_itself(upstream: str, host: str, port: int) -> bool:
    from urllib.parse import urlsplit

    from tui.tap.runner import is_loopback, is_this_machine
    parts = urlsplit(upstream)
    if (parts.port or (443 if parts.scheme == "https" else 80)) != port:
        return False
    target = parts.hostname or ""
    return target == host or (is_this_machine(target) and (is_loopback(host) or host in ("0.0.0.0", "::")))


def usable_folder(folder: Path) -> None:
    """The sessions folder exists (made if need be) and can be written to; else a usage error before listening
    (found later, every request would be forwarded and none recorded)."""
    import os

    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--session-dir {folder}: cannot make it a folder ({exc.strerror or exc})") from None
    if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(f"--session-dir {folder}: not a folder this user can write to")


def default_folder() -> Path:
    from tui.sessions.store import sessions_dir
    return sessions_dir()


def request_line(kind: str, tapped) -> str | None:
    """One line for a finished request (None for the other events, and for a problem found before its end:
    the line at its end says it)."""
    if kind != "end" and not (kind == "problem" and tapped.done):
        return None
    ex = tapped.exchange
    parts = [f"#{ex.number} {ex.method} {ex.path[:120]} -> {ex.status or '-'}"]
    record = tapped.record
    if record is not None:
        parts.append(f"conversation {tapped.conversation} step {tapped.index + 1}")
        parts.append(f"{record.document_tokens} tokens")
        parts.append(f"cached {record.cached_reported if record.cached_reported is not None else '?'} "
                     f"(predicted {shown_figure(record.predicted_cached)})")
        if record.compaction:
            cut = record.compaction
            parts.append(f"client compacted: {cut.get('left', 0)} messages ({cut.get('left_tokens', 0)} tokens) "
                         f"left, {cut.get('tokens_before', 0)} -> {cut.get('tokens_after', 0)} tokens")
        elif record.dropped:
            parts.append(f"client cut {len(record.dropped)} messages "
                         f"({sum(d.get('tokens', 0) for d in record.dropped)} tokens)")
        parent = (record.identity or {}).get("parent")
        if isinstance(parent, dict):
            parts.append(f"sub-agent of conversation {parent.get('conversation')}")
    if ex.duration is not None:
        parts.append(f"{ex.duration:.2f}s")
    parts.append(f"client {ex.client}")
    if ex.error:
        parts.append(ex.error)
    if tapped.problem:
        parts.append(tapped.problem)
    return one_line(" · ".join(parts), 600)


async def headless(upstream: str, host: str, port: int, folder: Path, max_body: int) -> int:
    from tui.tap.runner import Tap
    from tui.tap.server import STOP_GRACE

    def said(kind: str, tapped) -> None:
        line = request_line(kind, tapped)
        if line:
            print(line, flush=True)

    tap = Tap(upstream, folder, host, port, max_body, said)
    try:
        url = await tap.start()
    except OSError as exc:
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    print(one_line(f"ctxpane tap: listening on {url} -> {tap.server.upstream}; sessions in {folder}"), flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()

    def stopping() -> None:
        if not stop.is_set():
            stop.set()
        elif not tap.recorder.hurried:  # a second Ctrl+C: what is still queued is left out
            tap.recorder.hurry()
            print(f"ctxpane tap: stopping now: {tap.recorder.queued} queued steps of recording left out", flush=True)
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stopping)
    try:
        await stop.wait()
        queued = tap.recorder.queued
        behind = f"; recording {queued} queued steps first (Ctrl+C again to leave them out)" if queued else ""
        print(f"ctxpane tap: stopping (replies still streaming are cut in {STOP_GRACE:g} s){behind}…", flush=True)
    finally:
        progress = asyncio.ensure_future(draining(tap.recorder))
        try:
            await tap.close()
        finally:
            progress.cancel()
    print(one_line(f"ctxpane tap: {visible(tap.recorder.saved_line())}", 600), flush=True)
    return 0


DRAIN_SAID_EVERY = 5.0  # seconds between two lines on the recording still queued at a stop


async def draining(recorder) -> None:
    """While a stop records what is still queued (minutes, after a busy run), a line now and then says how much is
    left: a tap that says nothing looks hung, and is killed with its backlog unrecorded."""
    while True:
        await asyncio.sleep(DRAIN_SAID_EVERY)
        if recorder.queued and not recorder.hurried:
            print(f"ctxpane tap: recording {recorder.queued} queued steps still… (Ctrl+C again to leave them out)",
                  file=sys.stderr, flush=True)
