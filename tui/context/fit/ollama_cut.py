"""What an Ollama cut reveals of its num_ctx: how much of an overflowing prompt it keeps depends on its version.

From Ollama 0.30.11 (commit c191a145b, "llm: preserve generation headroom for shifted prompts", 2026-06-23) the
runner keeps `num_ctx - max((num_ctx - keep) // 2, 1)` tokens: num_keep (4, one more when the tokenizer adds a
BOS) and about half of the rest, to leave room for the reply. Before, it kept the window whole (`num_ctx`, or
`num_ctx - 1` under the llama-server runner). A version that cannot be read leaves both readings open: the window
planned with is then what was kept, the smaller.
"""

from __future__ import annotations

import re

NUM_KEEP = (4, 5)  # Ollama's default num_keep; one more when the model's tokenizer adds a BOS
HALVES_SINCE = (0, 30, 11)
_VERSION = re.compile(r"v?(\d+)\.(\d+)(?:\.(\d+))?")


def halves(version: object) -> bool | None:
    """Does this Ollama keep about half its window of an overflow? None when the version cannot be read
    (a server's word: anything but a version string is unread)."""
    found = _VERSION.match(version.strip()) if isinstance(version, str) else None
    if found is None:
        return None
    return tuple(int(part or 0) for part in found.groups()) >= HALVES_SINCE


def num_ctx_range(kept: int, version: str = "") -> tuple[int, int]:
    """The num_ctx values that would keep `kept` tokens of an overflowing prompt, lowest first."""
    halved = halves(version)
    whole = (kept, kept + 1)
    if halved is False or kept <= max(NUM_KEEP):
        return whole
    low = 2 * kept - max(NUM_KEEP) - 1  # kept = n - (n - keep) // 2, solved for n, keep 4 or 5
    high = 2 * kept - min(NUM_KEEP)
    return (low, high) if halved else (kept, high)


def explained(kept: int, version: str = "") -> tuple[str, int]:
    """The sentence saying what num_ctx Ollama ran with, and the window to plan the next requests with."""
    low, high = num_ctx_range(kept, version)
    fix = "set num_ctx (Modelfile PARAMETER num_ctx, or OLLAMA_CONTEXT_LENGTH) or send less"
    halved = halves(version)
    if halved:
        return (f"it kept {kept} tokens: Ollama {version} keeps num_keep and about half the rest of its window of "
                f"a prompt over num_ctx, so it ran with num_ctx {low}-{high}: {fix}", low)
    if halved is False:
        return f"it kept {kept} tokens, so Ollama {version} ran with num_ctx {low}-{high}: {fix}", low
    return (f"it kept {kept} tokens: num_ctx {kept}-{kept + 1} if this Ollama keeps its whole window of an "
            f"overflow (before 0.30.11), {2 * kept - max(NUM_KEEP) - 1}-{high} if it keeps half (0.30.11 on; its "
            f"version is not known): {fix}", kept)
