"""What a request's wire format says beside its messages, as notes for the view: what the server leaves out of
the document, the context the server holds (Responses' previous_response_id), and Anthropic's cache breakpoints."""

from __future__ import annotations

from typing import Any

from tui.context.formats import FormatKind, Parsed
from tui.sessions.model import RequestRecord


def findings(record: RequestRecord, parsed: Parsed, view: Any, engine: Any) -> list[str]:
    notes: list[str] = []
    if parsed.kind is not FormatKind.CHAT:
        info = getattr(engine, "info", None)
        if info is not None and getattr(info, "kind", "") == "llama.cpp":
            notes.append(f"{parsed.kind.title} request, rendered as the server (llama.cpp) converts it to chat "
                         "messages, with its own template: the server's count")
        else:
            notes.append(f"{parsed.kind.title} request, rendered as llama.cpp's server would convert it, with the "
                         "model family's template and tokenizer: the family's accounting, an estimate")
    context = record.context or {}
    if context.get("note"):
        notes.append(str(context["note"]))
    if parsed.kind is FormatKind.RESPONSES and parsed.store is not None:
        notes.append(f"store: {str(parsed.store).lower()} (the server {'keeps' if parsed.store else 'does not keep'} "
                     "this response for a later previous_response_id)")
    if parsed.kind is FormatKind.MESSAGES:
        from tui.context.cache.anthropic_marks import breakpoint_notes
        notes += breakpoint_notes(parsed, view, record.body.get("model") or "")
    notes += parsed.notes[:20]
    if len(parsed.notes) > 20:
        notes.append(f"and {len(parsed.notes) - 20} more parts the server leaves out")
    return [note[:1000] for note in notes]
