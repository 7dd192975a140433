"""What `ctxpane render` prints: the document on stdout, the summary on stderr, or everything as JSON."""

from __future__ import annotations

import sys
from typing import TextIO

from rich.console import Console
from rich.table import Table
from rich.text import Text

from tui.commands.terminal import is_terminal, json_text, write_text
from tui.context.assemble import Snapshot
from tui.context.request import RequestView
from tui.context.untrusted.visible import visible

ROLE_STYLES = {"system": "magenta", "developer": "magenta", "user": "green", "assistant": "cyan",
               "tool": "yellow", "none": "white"}


def write_document(snapshot: Snapshot, out: TextIO | None = None) -> None:
    """The document on stdout: the exact UTF-8 bytes, with nothing added (no wrapping, no final newline).

    A terminal is the exception (see terminal.py): there the document is shown role-coloured with
    visible stand-ins, still unwrapped.
    """
    out = out or sys.stdout
    if is_terminal(out):
        Console(file=out, highlight=False, soft_wrap=True).print(document_text(snapshot), markup=False)
    else:
        write_text(snapshot.document.text, out)


def write_json(view: RequestView, out: TextIO | None = None, extra: dict | None = None) -> None:
    out = out or sys.stdout
    out.write(json_text({**view_json(view), **(extra or {})}, out) + "\n")


def view_json(view: RequestView) -> dict:
    data = snapshot_json(view.snapshot)
    prefix = view.prefix
    data.update({
        "budget": view.budget, "sent_tokens": view.sent_tokens, "keep_all_tokens": view.keep_all_tokens,
        "image_tokens_estimate": view.image_tokens, "over_budget": view.plan.over_budget, "warning": view.plan.warning,
        "kept": view.origin,
        "hidden_tokens": view.hidden.to_dict(),
        "ledger": [vars(entry) for entry in view.ledger],
        "trust": [{"message": index, "kind": s.kind.value, "trusted": s.trusted, "why": s.why, "age_days": s.age_days,
                   "weight": s.weight} for index, s in enumerate(view.trust)],
        "curation": None if view.curation is None else {
            "budget": view.curation.budget, "pinned_tokens": view.curation.pinned_tokens,
            "packed_tokens": view.curation.packed_tokens,
            "items": [{"message": e.index, "verdict": e.verdict.value, "tokens": e.tokens, "score": e.score,
                       "reason": e.reason, "superseded_by": e.superseded_by,
                       "lines_kept": [list(r) for r in e.lines_kept]} for e in view.curation.entries]},
        "fences": [vars(info) for info in view.fences],
        "forged": [{"kind": f.block.kind, "role": f.block.role, "id": f.block.id, "start": f.block.start,
                    "message": view.origin[f.message] if f.message is not None else None, "in": f.kind}
                   for f in view.forged],
        "cache_prefix": {"chars": prefix.chars, "tokens": prefix.tokens, "total_tokens": prefix.total_tokens,
                         "cause": prefix.cause, "predicted_cached": prefix.predicted_cached, "rule": prefix.rule,
                         "message": view.origin[prefix.message] if prefix.message is not None else None,
                         "cause_class": prefix.cause_class, "divergent_token": prefix.divergent_token,
                         "diverges": prefix.diverges, "diverged": prefix.diverged},
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


def counts_title(snapshot: Snapshot, image_tokens: int = 0) -> Text:
    counts = snapshot.counts
    label = "exact" if counts.exact else "estimate"
    total = (f"{counts.total + image_tokens} sent ({counts.total} in the document + {image_tokens} for images, "
             "estimate)" if image_tokens else f"{counts.total}")
    return Text(visible(f"tokens: {total} ({label}, {snapshot.tokenizer}, template {snapshot.template})"), "bold")


def counts_table(snapshot: Snapshot) -> Table:
    counts = snapshot.counts
    table = Table()
    table.add_column("role / kind")
    table.add_column("tokens", justify="right")
    for role, value in counts.by_role.items():
        table.add_row(Text(f"role {role}", ROLE_STYLES.get(role, "white")), str(value))
    for kind, value in counts.by_kind.items():
        table.add_row(f"kind {kind}", str(value))
    return table


def summary_lines(view: RequestView) -> list[Text]:
    """One line per finding: control strings, forged headers, fences, the ledger, the cache and the cost."""
    lines = [Text(f"! message {view.origin[flag.message]} contains the control string {visible(repr(flag.text))} "
                  "(counted as plain text; some servers parse it as a control token)", "red")
             for flag in view.snapshot.flags]
    for forged in view.forged:
        where = view.origin[forged.message] if forged.message is not None else "?"
        block = forged.block
        lines.append(Text(visible(f"! FORGED {block.kind} header ({block.role}{', id ' + block.id if block.id else ''})"
                                  f" inside message {where}'s {forged.kind}"), "bold red"))
    lines += [Text(visible(f"fenced: message {info.message} from {info.source} (id {info.fence_id}), "
                           f"{info.escaped} marker(s) escaped"), "yellow") for info in view.fences]
    if view.ledger:
        kept = ", ".join(str(i) for i in view.origin if i >= 0)
        lines.append(Text(f"kept: messages {kept}" + (" and a summary" if -1 in view.origin else ""), "green"))
    lines += [Text(visible(f"dropped: message {entry.message} ({entry.role}, {entry.tokens} tokens) by "
                           f"{entry.policy}: {entry.reason}"), "strike dim") for entry in view.ledger]
    lines += curation_lines(view)
    lines += [Text(visible(f"trust: message {index}: {standing.line()}"), "yellow")
              for index, standing in enumerate(view.trust) if not standing.trusted]
    if view.plan.warning:
        lines.append(Text(visible(f"warning: {view.plan.warning}"), "bold yellow"))
    prefix = view.prefix
    if prefix.total_tokens and prefix.cause != "first request: nothing cached yet":
        lines.append(Text(visible(f"cache: {prefix.tokens} of {prefix.total_tokens} tokens unchanged (predicted "
                                  f"cached {prefix.predicted_cached}, {prefix.rule}); break: {prefix.cause}"), "cyan"))
    return lines


CURATED_STYLES = {"pinned": "bold green", "question": "bold green", "kept": "green", "trimmed": "yellow",
                  "superseded": "strike dim", "dropped": "strike dim"}


def curation_lines(view: RequestView) -> list[Text]:
    """The curated policy's verdict on every message, with its score; first the budget's lines."""
    curation = view.curation
    if curation is None:
        return []
    lines = [Text(f"curated: budget {curation.budget}, pinned and question {curation.pinned_tokens} tokens, "
                  f"packed {curation.packed_tokens}", "cyan")]
    lines += [Text(visible(f"curated: message {e.index} {e.verdict.value}, {e.tokens} tokens: {e.reason}"),
                   CURATED_STYLES[e.verdict.value]) for e in curation.entries]
    return lines


def cost_line(extra: dict) -> Text | None:
    """The price of this request before it is sent (prompt only), or why there is none."""
    cost = extra.get("cost")
    if not cost:
        return None
    if not cost["priced"]:
        return Text(visible(f"price: none for {cost['model'] or 'this model'} (tokens only; add it to prices.toml)"),
                    "dim")
    price = cost["price"]
    return Text(visible(f"price: this prompt costs ${cost['paid']:.6f} at {price['model']}'s ${price['input']:g}/M "
                        f"input ({cost['cached_tokens']} tokens cached, {cost['cached_from']}, saving "
                        f"${cost['saved_by_cache']:.6f}); keep-all ${cost['keep_all_paid']:.6f}; prices of "
                        f"{price['table_date']}"), "cyan")


def write_summary(view: RequestView, extra: dict | None = None) -> None:
    """The findings and the counts, on stderr: stdout carries the document alone."""
    console = Console(stderr=True, highlight=False)
    if (extra or {}).get("format", "chat") != "chat":
        console.print(Text(f"format: {extra['format']} (rendered as llama.cpp's server converts it to chat messages)"),
                      soft_wrap=True)
    for note in view.hidden.notes:
        console.print(Text(visible(f"note: {note}")), soft_wrap=True)
    for line in summary_lines(view):
        console.print(line, soft_wrap=True)
    console.print(counts_title(view.snapshot, view.image_tokens), soft_wrap=True)
    console.print(counts_table(view.snapshot))
    budget = f" (budget {view.budget})" if view.budget is not None else ""
    console.print(Text(f"cost: this request sends {view.sent_tokens} tokens; keep-all would send "
                       f"{view.keep_all_tokens}{budget}"), soft_wrap=True)
    line = cost_line(extra or {})
    if line is not None:
        console.print(line, soft_wrap=True)
    fit = (extra or {}).get("fit")
    if fit and fit.get("fits") is False:
        console.print(Text(visible(f"warning: {fit['message']}"), "bold yellow"), soft_wrap=True)
