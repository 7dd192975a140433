"""Read a document the way a format-trusting model would: which blocks does it see?

A block is a turn header (`<|im_start|>system`, `<|start_header_id|>user<|end_header_id|>`,
`[INST]`, ...), a rule block (`<<system id=sys-9>>`), or a fence header. A block whose header sits
in text a message brought (content, tool call, reasoning) rather than in the template's or the
fence's own text is forged.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from typing import Literal, TypeAlias

from tui.context.attribution.marking import SpanKind
from tui.context.document import Document
from tui.context.untrusted.fences import RULE_BLOCK_SHAPE

# Every run is possessive (*+), so the reader scans any text in linear time (no backtracking).
TURN_OPENERS = re.compile(
    r"(?:<\|im_start\|>|<\|start_header_id\|>|<\|start\|>|<start_of_turn>|<\|turn>)[ \t]*+"
    r"(?P<role>[A-Za-z_][\w.-]*+)"
    r"|<\|(?P<tokrole>system|user|assistant|tool|developer)\|>"
    r"|<｜(?P<dsrole>User|Assistant|System)｜>"
    r"|\[(?P<inst>INST|SYSTEM_PROMPT|TOOL_RESULTS|AVAILABLE_TOOLS)\]"
    r"|" + RULE_BLOCK_SHAPE.format(ws="") +  # the fences escape this same shape, and more
    r"|<(?P<fencetag>untrusted)\s++source=\"(?P<source>[^\"]*+)\"\s++id=\"(?P<fenceid>[^\"]*+)\">",
    re.IGNORECASE)
INST_ROLES = {"inst": "user", "system_prompt": "system", "tool_results": "tool", "available_tools": "system"}
OWN_KINDS = ("marker", "fence")


BlockKind: TypeAlias = Literal["turn", "rule", "fence"]


@dataclass(frozen=True)
class Block:
    kind: BlockKind
    role: str
    id: str | None
    start: int

    def key(self) -> tuple[BlockKind, str, str | None]:
        return (self.kind, self.role, self.id)


def _block(match: re.Match[str]) -> Block:
    if match.group("role"):
        return Block("turn", match.group("role").lower(), None, match.start())
    if match.group("tokrole") or match.group("dsrole"):
        return Block("turn", (match.group("tokrole") or match.group("dsrole")).lower(), None, match.start())
    if match.group("inst"):
        return Block("turn", INST_ROLES[match.group("inst").lower()], None, match.start())
    if match.group("rulerole"):
        return Block("rule", match.group("rulerole").lower(), match.group("ruleid"), match.start())
    return Block("fence", f"untrusted:{match.group('source')}", match.group("fenceid"), match.start())


def read_blocks(text: str) -> list[Block]:
    """Every block header a format-trusting reader finds, in order."""
    return [_block(m) for m in TURN_OPENERS.finditer(text) if not m.group(0).startswith("<</")]


def masked_text(document: Document) -> str:
    """The document with every message's own text blanked: what the template and fences alone wrote."""
    pieces: list[str] = []
    for span in document.spans:
        text = document.span_text(span)
        pieces.append(text if span.kind in OWN_KINDS else "x" * len(text))
    return "".join(pieces)


@dataclass
class ForgedBlock:
    block: Block
    message: int | None
    kind: SpanKind  # the span kind the header sits in


def forged_blocks(document: Document) -> list[ForgedBlock]:
    """Blocks whose headers come from a message's own text, not from the template or a fence."""
    starts = [span.start for span in document.spans]
    forged: list[ForgedBlock] = []
    for block in read_blocks(document.text):
        span = document.spans[bisect_right(starts, block.start) - 1]
        if span.kind not in OWN_KINDS:
            forged.append(ForgedBlock(block, span.message, span.kind))
    return forged
