"""What fills the window, in five kinds and a grid of cells (the `/context` command): system, tools, messages,
the reply's reserved room, and what is free. Read from `RequestView.breakdown`, the one accounting the Tokens
tab shows too, so the grid and the tab never disagree."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from tui.context.request import TOOLS_PART

if TYPE_CHECKING:
    from tui.context.request import RequestView

CELLS = 100  # a 10 by 10 grid: a cell is a hundredth of the window


class Kind(Enum):
    SYSTEM = "system"
    TOOLS = "tools"
    MESSAGES = "messages"
    RESERVED = "reserved"
    FREE = "free"


PARTS_OF = {"system": Kind.SYSTEM, "developer": Kind.SYSTEM, TOOLS_PART: Kind.TOOLS,
            "reserved output": Kind.RESERVED, "free": Kind.FREE}  # everything else is the messages' (with markers)


@dataclass(frozen=True)
class GridPart:
    kind: Kind
    tokens: int
    cells: int


@dataclass(frozen=True)
class ContextGrid:
    parts: tuple[GridPart, ...]
    window: int | None  # None: the window is not known; the grid then spans what is sent and reserved
    over: int  # tokens past the window (0 when it fits)

    def cells(self) -> list[Kind]:
        """The grid's cells in order, each the kind it stands for."""
        return [part.kind for part in self.parts for _ in range(part.cells)]


def context_grid(view: "RequestView", window: int | None, reserved: int, cells: int = CELLS) -> ContextGrid:
    tokens = dict.fromkeys(Kind, 0)
    for name, count in view.breakdown(window, reserved):
        tokens[PARTS_OF.get(name, Kind.MESSAGES)] += count
    used = view.sent_tokens + reserved
    total = max(1, window if window and window >= used else used)
    shares = _apportion([tokens[kind] for kind in Kind], total, cells)
    parts = tuple(GridPart(kind, tokens[kind], share) for kind, share in zip(Kind, shares))
    return ContextGrid(parts, window, max(0, used - window) if window else 0)


def _apportion(counts: list[int], total: int, cells: int) -> list[int]:
    """Cells for each count, summing to `cells` (largest remainders), every non-zero count at least one cell."""
    exact = [count * cells / total for count in counts]
    shares = [int(share) for share in exact]
    order = sorted(range(len(counts)), key=lambda i: exact[i] - shares[i], reverse=True)
    for index in order[:max(0, cells - sum(shares))]:
        shares[index] += 1
    for index, count in enumerate(counts):
        if count and not shares[index]:  # seen, if small: taken from the largest share
            largest = max(range(len(shares)), key=lambda i: shares[i])
            if shares[largest] > 1:
                shares[largest] -= 1
                shares[index] = 1
    return shares
