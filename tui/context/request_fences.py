"""A request's fences: what they escape for a template and tokenizer, every untrusted message fenced on the wire,
and each fence's header, note and footer marked as kind `fence` in the document (tui/context/request.py assembles
the request around them)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from tui.context.attribution.marking import SpanKind
from tui.context.document import Document, Span
from tui.context.json_types import WireMessage
from tui.context.messages import Message, content_text, image_parts
from tui.context.tokens.counting import Tokenizer, all_special_tokens
from tui.context.trust import fence_note
from tui.context.untrusted.fences import FenceStyle, FencedText, control_strings, fence

DEFAULT_NOTE = FenceStyle().note  # a style with a note of its own keeps it; the default gives way to each kind's

if TYPE_CHECKING:
    from tui.context.templates.library import ChatTemplate


@dataclass
class FenceInfo:
    message: int  # session index
    fence_id: str
    source: str
    escaped: int


def fence_escapes(template: ChatTemplate, tokenizer: Tokenizer) -> frozenset[str]:
    """What fences escape for this template and tokenizer: the template's control strings (its
    literals that look like markers, its bos/eos) and every special or added token of the tokenizer."""
    return control_strings(template.source, tuple(template.special_strings()), all_special_tokens(tokenizer))


def fence_messages(messages: list[Message], style: FenceStyle,
                   escapes: frozenset[str] | list[str]) -> tuple[list[WireMessage], dict[int, FencedText],
                                                                 list[FenceInfo]]:
    """Wire messages with every untrusted one fenced; `escapes` comes from `fence_escapes`."""
    wire: list[WireMessage] = []
    fenced: dict[int, FencedText] = {}
    infos: list[FenceInfo] = []
    for index, message in enumerate(messages):
        item = message.to_wire()
        if style.enabled and not message.provenance.trusted and message.role != "assistant" \
                and not (image_parts(message.content) and not content_text(message.content).strip()):
            # (an image alone has no text to fence: its pixels are sent as they are)
            source = message.provenance.label or message.provenance.source
            fence_id = message.id or f"m{index}"
            own = replace(style, note=fence_note(message, style.note)) if style.note == DEFAULT_NOTE else style
            result = fence(content_text(message.content), source, fence_id, own, escapes)
            images = image_parts(item["content"])  # kept beside the fenced text, never dropped by the fence
            item["content"] = [{"type": "text", "text": result.text}, *images] if images else result.text
            fenced[index] = result
            infos.append(FenceInfo(index, fence_id, result.source, result.escaped))
        wire.append(item)
    return wire, fenced, infos


def split_fence_spans(document: Document, fenced: dict[int, FencedText], origin: list[int]) -> Document:
    """Mark the header, note and footer of each fence as kind `fence` inside its content span."""
    spans: list[Span] = []
    for span in document.spans:
        session_index = origin[span.message] if span.message is not None else None
        item = fenced.get(session_index) if span.kind == "content" and session_index is not None else None
        text = document.span_text(span)
        head = (item.header + item.note) if item else ""
        if not item or not text.startswith(head) or not text.endswith(item.footer):
            spans.append(span)
            continue
        body_start, body_end = span.start + len(head), span.end - len(item.footer)
        parts: tuple[tuple[int, int, SpanKind], ...] = (
            (span.start, body_start, "fence"), (body_start, body_end, "content"), (body_end, span.end, "fence"))
        for start, end, kind in parts:
            if end > start:
                spans.append(replace(span, start=start, end=end, kind=kind, tokens=0))
    return Document(document.text, spans, document.roles)
