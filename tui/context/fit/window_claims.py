"""Whether a window a server's figures reveal is planned with, or only shown as the server's claim.

One figure of one answer can lie (a proxy's, a broken server's, a hostile one's): a cut that kept 12 tokens would
make every later request drop nearly everything. So a revealed window is planned with only when it is a window
some chat server could have (MIN_WINDOW or more, and consistent with the request it came from) and a second,
independent figure agrees: the window an earlier request revealed, or the server's own count of this prompt
matching what ctxpane counted exactly (a refusal that counted right names its window right). Otherwise it is kept
as a claim, said in the receipt, and waits for another request to agree.
"""

from __future__ import annotations

from dataclasses import dataclass

from tui.context.fit.window import WindowSize

MIN_WINDOW = 64  # tokens: no chat template and question fit in less; a smaller "window" is not believed
AGREEMENT = 0.02  # two figures agree within 2% (at least 8 tokens: Ollama's num_keep moves its cut by a few)


@dataclass(frozen=True)
class WindowClaim:
    """A window one request revealed, kept until another agrees with it."""

    window: WindowSize
    request: int


def agree(a: int, b: int) -> bool:
    return abs(a - b) <= max(8, round(max(a, b) * AGREEMENT))


def implausible(tokens: int, received: int | None, refused: bool) -> str:
    """Why a revealed window cannot be one ('' when it can): too small, or not what the refusal shows."""
    if tokens < MIN_WINDOW:
        return f"{tokens} tokens is smaller than any chat model's window"
    if refused and received is not None and tokens > received:
        return f"the server refused {received} tokens as over a window of {tokens}"
    return ""  # (a cut's window may pass what was sent: Ollama keeps half its window, a count may be an estimate)


def weigh(claim: WindowSize, number: int, sent: int, exact: bool, received: int | None, refused: bool,
          earlier: WindowClaim | None) -> tuple[WindowSize | None, WindowClaim | None, str]:
    """(the window to plan with or None, the claim to keep for the next request, a line for the receipt)."""
    doubt = implausible(claim.tokens, received, refused)
    if doubt:
        return None, earlier, f"the server's figures claim a window of {claim.tokens} tokens: not planned with " \
                              f"({doubt})"
    if earlier is not None and agree(earlier.window.tokens, claim.tokens):
        tokens = min(earlier.window.tokens, claim.tokens)
        return (WindowSize(tokens, claim.source, f"{claim.detail}; request {earlier.request} showed the same"),
                None, f"a window of {tokens} tokens: requests {earlier.request} and {number} agree, planned with")
    if refused and exact and received is not None and received == sent:
        return claim, None, f"a window of {claim.tokens} tokens: the server's refusal counted the prompt as " \
                            f"ctxpane did ({sent}), planned with"
    return None, WindowClaim(claim, number), f"the server's figures claim a window of {claim.tokens} tokens: " \
                                             "planned with once another request agrees (one figure can be wrong)"
