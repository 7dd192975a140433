"""`ctxpane replay FILE`: step through a session's requests (in the app), or check them (--check/--json)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from tui.commands.arguments import STEP, QuietParser, whole_number
from tui.commands.inputs import open_session
from tui.commands.sessions_common import session_engine, template_failures
from tui.commands.terminal import json_text
from tui.errors import UsageError, one_line
from tui.sessions.receipts import cost_line, received_line
from tui.sessions.replay import Replayer, recorded_tokenizer


def build_parser() -> argparse.ArgumentParser:
    parser = QuietParser(prog="ctxpane replay", description="Replay a session's requests step by step.")
    parser.add_argument("file", help="a session file")
    parser.add_argument("--step", type=whole_number(*STEP), default=None, metavar="N",
                        help="start at (or check only) this step, from 1")
    parser.add_argument("--check", action="store_true", help="no app: check each step, one line per step; exit 1 "
                                                             "when a step differs, drifts or is unproven")
    parser.add_argument("--json", action="store_true", help="no app: each step as JSON")
    parser.add_argument("--template", default=None, help="render with this template instead of the session's")
    parser.add_argument("--tokenizer", default=None, help="count with this tokenizer instead of the session's")
    return parser


@dataclass(frozen=True)
class ReplayInApp:
    """What `ctxpane replay FILE` asks of the CLI: open the app on this (checked) file in replay mode.

    The commands sit below the app and never import it; tui/cli.py starts the app with this request.
    """

    path: Path
    step: int | None = None


def step_json(step) -> dict:
    document = step.snapshot.document
    return {"step": step.number, "format": step.record.format, "matches_stored": step.matches, "document_sha256": step.record.document_hash,
            "tokens": step.view.sent_tokens, "tokens_stored": step.record.document_tokens,
            "exact": step.snapshot.counts.exact, "chars": len(document.text),
            "cache_prefix": {"tokens": step.prefix.tokens, "chars": step.prefix.chars, "cause": step.prefix.cause,
                             "predicted_cached": step.prefix.predicted_cached},
            "cached_reported": step.record.cached_reported, "dropped": step.record.dropped,
            "drift": step.drift, "notes": step.notes, "incomplete": step.record.incomplete,
            "fit": step.record.fit, "received": step.record.received, "cost": step.record.cost,
            "sent": step.record.sent, "identity": step.record.identity, "compaction": step.record.compaction,
            "text": document.text}


def run(argv: list[str]) -> int | ReplayInApp:
    args = build_parser().parse_args(argv)
    opened = open_session(args.file)
    if not (args.check or args.json):
        return ReplayInApp(opened.path, args.step)
    session = opened.session
    template, tokenizer = session_engine(session, args.template, args.tokenizer)
    replayer = Replayer(session, template, tokenizer)
    if not len(replayer):
        raise UsageError(f"{args.file}: the session has no requests to replay")
    steps = range(len(replayer)) if args.step is None else [args.step - 1]
    if args.step is not None and not 1 <= args.step <= len(replayer):
        raise UsageError(f"no step {args.step}: the session has {len(replayer)} requests")
    all_good = True
    for index in steps:
        with template_failures(f"{args.file}: step {index + 1}", template.name):
            try:
                step = replayer.step(index)
            except ValueError as exc:  # a stored body its own format or the file's bounds refuse: one line
                raise UsageError(f"{args.file}: step {index + 1}: {exc}") from None
        all_good &= step.matches and step.drift is None
        if args.json:
            print(json_text(step_json(step)))
            continue
        print(step_line(step, replayer))
    sys.stdout.flush()
    return 0 if all_good else 1


def step_line(step, replayer: Replayer) -> str:
    if not step.record.document_hash:
        return (f"step {step.number}: NOT CHECKED: request {step.record.number} has no document_hash, "
                "so nothing proves what was sent")
    return (f"step {step.number}: {'matches' if step.matches else 'DIFFERS FROM'} the stored request · "
            f"{tokens_text(step, replayer)} · "
            f"cache {step.prefix.tokens} unchanged ({one_line(step.prefix.cause, 200)}) · "
            f"{len(step.record.dropped)} dropped · drift: {drift_text(step.drift)}"
            + compaction_text(step.record.compaction)
            + (" · reply incomplete" if step.record.incomplete else "")
            + received_line(step.record.received) + cost_line(step.record.cost))


def compaction_text(cut: dict | None) -> str:
    """The client's own compaction at this step (a tapped session), in the step's line."""
    if not cut:
        return ""
    return (f" · the client compacted its history: {cut.get('left', 0)} messages "
            f"({cut.get('left_tokens', 0)} tokens) left, {cut.get('tokens_before', 0)} -> "
            f"{cut.get('tokens_after', 0)} tokens")


def tokens_text(step, replayer: Replayer) -> str:
    """The count against the stored one, naming both tokenizers when they differ (then it is not drift)."""
    counted, recorded = replayer.tokenizer.name, recorded_tokenizer(replayer.session, step.record)
    if counted == recorded:
        return f"{step.view.sent_tokens} tokens (stored {step.record.document_tokens})"
    return one_line(f"{step.view.sent_tokens} tokens by {counted} (stored {step.record.document_tokens} "
                    f"by {recorded}: not compared)", 300)


def drift_text(drift: dict | None) -> str:
    """The stored body rendered today: 'none', or what drifted (template or tokenizer) and where."""
    if drift is None:
        return "none"
    if drift["kind"] == "tokenizer":
        return f"tokenizer, {drift['fresh']} (stored {drift['stored']})"
    if drift["line"] is None:
        return "template (no template at hand gives the stored document: only the hashes differ)"
    return f"template, at line {drift['line']}"
