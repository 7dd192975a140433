"""session -> assemble -> snapshot: the one computation every view reads from."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import enum
import re
from dataclasses import dataclass, field, replace

from tui.context.cache.prefix import common_prefix_length
from tui.context.document import Document, build_document, claim_arguments
from tui.context.families.identity import exact_counts, template_identity, tokenizer_identity
from tui.context.json_types import JSONObject, WireMessage
from tui.context.messages import Message
from tui.context.tokens.counting import SegmentCache, TokenCounts, Tokenizer, count_tokens, special_pattern

if TYPE_CHECKING:
    from tui.context.templates.library import ChatTemplate

# Control-token strings of the common families, flagged wherever they appear in content.
COMMON_SPECIALS = ("<|im_start|>", "<|im_end|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>",
                   "<|begin_of_text|>", "<|start|>", "<|message|>", "<|channel|>", "<|end|>", "<|return|>",
                   "<|call|>", "<|constrain|>", "[INST]", "[/INST]", "<start_of_turn>", "<end_of_turn>",
                   "<|system|>", "<|user|>", "<|assistant|>", "<｜User｜>", "<｜Assistant｜>", "<|endoftext|>")


class ServerReading(enum.Flag):
    """How a server reads a request beyond what its template writes: traits of some servers, combined with |."""

    PLAIN = 0
    CONTENT_SPECIALS = enum.auto()  # control strings in message text are read as the control tokens they are
    PREFILL = enum.auto()  # a last assistant message is continued, not closed and followed by a new turn


@dataclass
class SpecialFlag:
    """A control-token string found inside a message's own text (it is counted as plain text)."""

    message: int
    start: int
    end: int
    text: str


@dataclass
class Snapshot:
    document: Document
    counts: TokenCounts
    template: str
    tokenizer: str
    wire: list[WireMessage]
    flags: list[SpecialFlag] = field(default_factory=list)
    media_markers: bool = False  # rendered with images as llama.cpp's media marker (the template takes no parts)


def wire_messages(messages: Sequence[Message | WireMessage]) -> list[WireMessage]:
    return [m.to_wire() if isinstance(m, Message) else dict(m) for m in messages]


def find_special_strings(document: Document, specials: list[str]) -> list[SpecialFlag]:
    ordered = sorted(set(specials) | set(COMMON_SPECIALS), key=len, reverse=True)
    pattern = re.compile("|".join(map(re.escape, ordered)))
    flags: list[SpecialFlag] = []
    for span in document.spans:
        if span.kind != "marker" and span.message is not None:
            for match in pattern.finditer(document.text, span.start, span.end):
                flags.append(SpecialFlag(span.message, match.start(), match.end(), match.group(0)))
    return flags


def is_exact(template: ChatTemplate, tokenizer: Tokenizer, verified: bool | None = None) -> bool:
    """Whether the tokenizer is the model's own, from identities: the model is the template's family."""
    return exact_counts(tokenizer_identity(tokenizer), template_identity(template).family, verified)


def assemble(messages: Sequence[Message | WireMessage], template: ChatTemplate, tokenizer: Tokenizer,
             variables: dict[str, Any] | None = None, add_generation_prompt: bool = True,
             tools: list[JSONObject] | None = None, cache: SegmentCache | None = None,
             exact: bool | None = None, reading: ServerReading = ServerReading.PLAIN) -> Snapshot:
    """Render the request's document, attribute it, count it, flag control strings in content, as a server of
    `reading` reads it (with PREFILL a last assistant message is continued: tui/context/continuation.py).

    The template is given the messages and tools as the server hands them to it (llama_wire.py: `content: null`
    as empty text, text parts joined, arguments parsed, tools without `strict`...); the snapshot keeps `messages`
    as they are sent."""
    render, shown, render_vars, wire = _prepared(messages, template, variables, add_generation_prompt, tools,
                                                 reading)
    specials = template.special_strings()
    document = claim_arguments(build_document(render, shown, specials, **render_vars), shown)
    document, counts = count_tokens(document, tokenizer, specials, cache,
                                   content_specials=ServerReading.CONTENT_SPECIALS in reading)
    # decided after counting (a server's tokenizer may have fallen back meanwhile); `exact`: the caller's check
    counts.exact = is_exact(template, tokenizer, exact)
    return Snapshot(document, counts, template.name, tokenizer.name, wire,
                    find_special_strings(document, specials))


def _prepared(messages: Sequence[Message | WireMessage], template: ChatTemplate, variables: dict[str, Any] | None,
              add_generation_prompt: bool, tools: list[JSONObject] | None,
              reading: ServerReading) -> tuple[Any, list[WireMessage], dict[str, Any], list[WireMessage]]:
    """The render to call, the messages it is given and its variables, as the server hands them to its template;
    and the messages as they are sent."""
    from tui.context.continuation import continued, continues
    from tui.context.llama_wire import reading_for, server_messages, server_tools

    wire = wire_messages(messages)
    given = reading_for(template)
    prefill = ServerReading.PREFILL in reading and continues(wire)
    render_vars = dict(variables or {})
    render_vars["add_generation_prompt"] = add_generation_prompt
    if tools:
        render_vars["tools"] = server_tools(tools, given.shape)
    render = continued(template.render) if prefill else template.render
    return render, server_messages(wire, given, continued=prefill), render_vars, wire


def total_without_tools(snapshot: Snapshot, template: ChatTemplate, tokenizer: Tokenizer,
                        variables: dict[str, Any] | None = None, add_generation_prompt: bool = True,
                        cache: SegmentCache | None = None, reading: ServerReading = ServerReading.PLAIN) -> int:
    """The tokens of `snapshot`'s request rendered without its tools (what the tools cost is the difference).

    Most templates write the tools in one place: the text without them is then the document less one run, counted
    on the document's own spans (its segments come from the cache): one plain render, no attribution. A template
    that writes the request differently without tools is assembled again."""
    render, shown, render_vars, _wire = _prepared(snapshot.wire, template, variables, add_generation_prompt, None,
                                                  reading)
    specials = template.special_strings()
    content_specials = ServerReading.CONTENT_SPECIALS in reading
    document = less_one_run(snapshot.document, render(shown, **render_vars), set(specials) | tokenizer.specials(),
                            content_specials)
    if document is None:
        return assemble(snapshot.wire, template, tokenizer, variables, add_generation_prompt, None, cache,
                        reading=reading).counts.total
    return count_tokens(document, tokenizer, specials, cache, content_specials=content_specials)[1].total


def less_one_run(document: Document, text: str, specials: set[str] | frozenset[str] = frozenset(),
                 content_specials: bool = False) -> Document | None:
    """`document` without the one run of its text that `text` lacks, its spans cut and moved to match; None
    when `text` is not the document less one run, or when the count could depend on what is not known: where
    the run lies, when it could lie in more than one place with a control string there, and how a control
    string inside a message's text would be read (the document's attribution of it is kept, not made again)."""
    full, cut = document.text, len(document.text) - len(text)
    head = common_prefix_length(full, text)
    if cut < 0 or full[head + cut:] != text[head:]:
        return None
    earliest = len(text) - _common_suffix(full, text)  # the run may start anywhere from here to `head`
    if earliest < head and _holds_any(full, earliest, head + cut, specials):
        return None
    before = [replace(span, end=min(span.end, head)) for span in document.spans if span.start < head]
    after = [replace(span, start=max(span.start, head + cut) - cut, end=span.end - cut)
             for span in document.spans if span.end > head + cut]
    if before and after and before[-1].kind == after[0].kind == "marker":
        # the template's text either side of the run is one run of it: a control token the cut went through
        # ("<|" + "im_start|>") is read whole again
        after[0] = replace(after[0], start=before.pop().start)
    spans = before + after
    if not content_specials and any(_holds_any(text, span.start, span.end, specials)
                                    for span in spans if span.kind != "marker"):
        return None
    return Document(text, spans, document.roles)


def _holds_any(text: str, start: int, end: int, strings: set[str] | frozenset[str]) -> bool:
    pattern = special_pattern(frozenset(strings))
    return pattern is not None and pattern.search(text, start, end) is not None


def _common_suffix(left: str, right: str) -> int:
    """The length of the longest common suffix."""
    low, high = 0, min(len(left), len(right))
    while low < high:
        middle = (low + high + 1) // 2
        if left[len(left) - middle:len(left) - low] == right[len(right) - middle:len(right) - low]:
            low = middle
        else:
            high = middle - 1
    return low


