"""`ctxpane render FILE`: the document a request would send, with its tokens, headless."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace

from rich.console import Console
from rich.table import Table
from rich.text import Text

from tui.errors import UsageError
from tui.commands.inputs import open_template, open_tokenizer, parse_vars, read_conversation
from tui.context.assemble import Snapshot
from tui.context.registry import tokenizer_for_family
from tui.context.budget import POLICIES, PolicyError, PolicySettings
from tui.context.cache import RULES
from tui.context.fences import FenceStyle
from tui.context.request import RequestSettings, RequestView, build_request
from tui.context.safety import visible
from tui.context.templates import TemplateRenderError

ROLE_STYLES = {"system": "magenta", "developer": "magenta", "user": "green", "assistant": "cyan",
               "tool": "yellow", "none": "white"}


class QuietParser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2, like every other bad input
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    parser = QuietParser(prog="ctxpane render", description="Render a conversation as the model receives it.")
    parser.add_argument("file", help="JSON list of messages, or a chat-completions request body")
    parser.add_argument("--template", default="chatml", help="built-in name or path (.jinja, tokenizer_config.json, .gguf)")
    parser.add_argument("--tokenizer", default=None, help="o200k_base, o200k_harmony, cl100k_base, qwen3, or a tokenizer.json")
    parser.add_argument("--var", action="append", default=[], metavar="KEY=VALUE", help="template variable")
    parser.add_argument("--no-generation-prompt", action="store_true", help="do not end with the assistant header")
    parser.add_argument("--json", action="store_true", help="print the document, spans and counts as JSON")
    parser.add_argument("--policy", choices=POLICIES, default="keep-all", help="truncation policy")
    parser.add_argument("--context", type=int, default=None, metavar="N", help="context window in tokens")
    parser.add_argument("--max-tokens", type=int, default=0, metavar="N", help="tokens reserved for the reply")
    parser.add_argument("--keep-last", type=int, default=4, metavar="N", help="turns kept by keep-last-n")
    parser.add_argument("--summary", default=None, help="summary text standing in for dropped turns (summarise)")
    parser.add_argument("--no-fences", action="store_true", help="send untrusted text without fences")
    parser.add_argument("--previous", default=None, metavar="FILE", help="the previous request, for the cache prefix")
    parser.add_argument("--cache-rule", choices=RULES, default="llama.cpp", help="provider rule for cached tokens")
    return parser


def view_json(view: RequestView) -> dict:
    data = snapshot_json(view.snapshot)
    prefix = view.prefix
    data.update({
        "budget": view.budget, "sent_tokens": view.sent_tokens, "keep_all_tokens": view.keep_all_tokens,
        "image_tokens_estimate": view.image_tokens, "over_budget": view.plan.over_budget, "warning": view.plan.warning,
        "kept": view.origin,
        "ledger": [vars(entry) for entry in view.ledger],
        "fences": [vars(info) for info in view.fences],
        "forged": [{"kind": f.block.kind, "role": f.block.role, "id": f.block.id, "start": f.block.start,
                    "message": view.origin[f.message] if f.message is not None else None, "in": f.kind}
                   for f in view.forged],
        "cache_prefix": {"chars": prefix.chars, "tokens": prefix.tokens, "total_tokens": prefix.total_tokens,
                         "cause": prefix.cause, "predicted_cached": prefix.predicted_cached, "rule": prefix.rule,
                         "message": view.origin[prefix.message] if prefix.message is not None else None},
    })
    return data


def snapshot_json(snapshot: Snapshot) -> dict:
    document = snapshot.document
    return {
        "text": document.text,
        "spans": [{"start": s.start, "end": s.end, "message": s.message, "role": document.role_of(s),
                   "kind": s.kind, "tokens": s.tokens, **({"transformed": True} if s.transformed else {})}
                  for s in document.spans],
        "tokens": {"total": snapshot.counts.total, "by_role": snapshot.counts.by_role,
                   "by_kind": snapshot.counts.by_kind, "exact": snapshot.counts.exact},
        "template": snapshot.template,
        "tokenizer": snapshot.tokenizer,
        "special_strings_in_content": [{"message": f.message, "start": f.start, "end": f.end, "text": f.text}
                                       for f in snapshot.flags],
    }


def document_text(snapshot: Snapshot) -> Text:
    """The document, role-coloured, markers dimmed, control strings in content flagged in reverse."""
    document = snapshot.document
    flagged = [(f.start, f.end) for f in snapshot.flags]
    out = Text()
    for span in document.spans:
        style = ROLE_STYLES.get(document.role_of(span), "white")
        if span.kind == "fence":
            style = "bold black on yellow"
        elif span.kind == "marker":
            style = f"dim {style}"
        elif span.kind == "reasoning":
            style = f"italic {style}"
        position = span.start
        for start, end in flagged:
            if span.start <= start < span.end:
                out.append(visible(document.text[position:start]), style)
                out.append(visible(document.text[start:end]), "bold reverse red")
                position = end
        out.append(visible(document.text[position:span.end]), style)
    return out


def counts_table(snapshot: Snapshot) -> Table:
    counts = snapshot.counts
    label = "exact" if counts.exact else "estimate"
    table = Table(title=f"tokens: {counts.total} ({label}, {snapshot.tokenizer}, template {snapshot.template})")
    table.add_column("role / kind")
    table.add_column("tokens", justify="right")
    for role, value in counts.by_role.items():
        table.add_row(Text(f"role {role}", ROLE_STYLES.get(role, "white")), str(value))
    for kind, value in counts.by_kind.items():
        table.add_row(f"kind {kind}", str(value))
    return table


def request_settings(args: argparse.Namespace, tools: list | None) -> RequestSettings:
    template = open_template(args.template)
    tokenizer = open_tokenizer(args.tokenizer or tokenizer_for_family(template.identity.family))
    try:
        policy = PolicySettings(args.policy, args.context, args.max_tokens, args.keep_last, args.summary)
    except PolicyError as exc:
        raise UsageError(str(exc)) from None
    return RequestSettings(template, tokenizer, parse_vars(args.var), tools, not args.no_generation_prompt,
                           policy, FenceStyle(enabled=not args.no_fences), args.cache_rule)


def build(messages, settings: RequestSettings, previous=None, number: int = 1) -> RequestView:
    try:
        return build_request(messages, settings, previous, number)
    except TemplateRenderError as exc:
        raise UsageError(f"template {settings.template.name} rejected the conversation: {exc}") from None
    except (MemoryError, RecursionError) as exc:  # a template from outside that runs away
        raise UsageError(f"template {settings.template.name} failed: {type(exc).__name__}") from None


def print_view(view: RequestView, console: Console) -> None:
    console.print(document_text(view.snapshot), markup=False, highlight=False)
    for flag in view.snapshot.flags:
        console.print(Text(f"! message {view.origin[flag.message]} contains the control string {flag.text!r} "
                           "(counted as plain text; some servers parse it as a control token)", "red"))
    for forged in view.forged:
        where = view.origin[forged.message] if forged.message is not None else "?"
        console.print(Text(f"! FORGED {forged.block.kind} header ({forged.block.role}"
                           f"{', id ' + forged.block.id if forged.block.id else ''}) inside message {where}'s "
                           f"{forged.kind}", "bold red"))
    for info in view.fences:
        console.print(Text(f"fenced: message {info.message} from {info.source} (id {info.fence_id}), "
                           f"{info.escaped} marker(s) escaped", "yellow"))
    if view.ledger:
        kept = ", ".join(str(i) for i in view.origin if i >= 0)
        console.print(Text(f"kept: messages {kept}" + (" and a summary" if -1 in view.origin else ""), "green"))
    for entry in view.ledger:
        console.print(Text(f"dropped: message {entry.message} ({entry.role}, {entry.tokens} tokens) by "
                           f"{entry.policy}: {entry.reason}", "strike dim"))
    if view.plan.warning:
        console.print(Text(f"warning: {view.plan.warning}", "bold yellow"))
    if view.prefix.total_tokens and view.prefix.cause != "first request: nothing cached yet":
        console.print(Text(f"cache: {view.prefix.tokens} of {view.prefix.total_tokens} tokens unchanged "
                           f"(predicted cached {view.prefix.predicted_cached}, {view.prefix.rule}); "
                           f"break: {view.prefix.cause}", "cyan"))
    console.print(counts_table(view.snapshot))
    console.print(f"cost: this request sends {view.sent_tokens} tokens; keep-all would send {view.keep_all_tokens}"
                  + (f" (budget {view.budget})" if view.budget is not None else ""), markup=False)


def run(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    messages, tools, _extra = read_conversation(args.file)
    settings = request_settings(args, tools)
    previous = None
    if args.previous:
        old_messages, old_tools, _ = read_conversation(args.previous)
        previous = build(old_messages, replace(settings, tools=old_tools)).shape
    view = build(messages, settings, previous, 2 if previous else 1)
    if args.json:
        json.dump(view_json(view), sys.stdout, ensure_ascii=False)
        sys.stdout.write("\n")
        return 0
    print_view(view, Console(highlight=False))
    return 0
