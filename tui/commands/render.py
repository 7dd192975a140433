"""`ctxpane render FILE`: the document a request would send, with its tokens, headless."""

from __future__ import annotations

import argparse
import json
import sys

from rich.console import Console
from rich.table import Table
from rich.text import Text

from tui.errors import UsageError
from tui.commands.inputs import open_template, open_tokenizer, parse_vars, read_conversation
from tui.context.assemble import NATIVE_TOKENIZER, Snapshot, assemble
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
    return parser


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
        if span.kind == "marker":
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


def run(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    messages, tools, _extra = read_conversation(args.file)
    template = open_template(args.template)
    tokenizer = open_tokenizer(args.tokenizer or NATIVE_TOKENIZER.get(template.name, "o200k_base"))
    try:
        snapshot = assemble(messages, template, tokenizer, parse_vars(args.var),
                            add_generation_prompt=not args.no_generation_prompt, tools=tools)
    except TemplateRenderError as exc:
        raise UsageError(f"template {template.name} rejected the conversation: {exc}") from None
    if args.json:
        json.dump(snapshot_json(snapshot), sys.stdout, ensure_ascii=False)
        sys.stdout.write("\n")
        return 0
    console = Console(highlight=False)
    console.print(document_text(snapshot), markup=False, highlight=False)
    for flag in snapshot.flags:
        console.print(Text(f"! message {flag.message} contains the control string {flag.text!r} "
                           "(counted as plain text; some servers parse it as a control token)", "red"))
    console.print(counts_table(snapshot))
    return 0
