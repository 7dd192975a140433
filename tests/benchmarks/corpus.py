"""A realistic synthetic conversation for benchmarks: prose, code and JSON, of a chosen size."""

import json
import random

PROSE = ("The quick brown fox jumps over the lazy dog while the committee reviews the quarterly figures "
         "and notes that latency improved by 12.5% after the cache was warmed. ").split()


def paragraph(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(PROSE) for _ in range(words))


def block(rng: random.Random, index: int) -> str:
    kind = index % 3
    if kind == 0:
        return paragraph(rng, 330)
    if kind == 1:
        lines = [f"def step_{index}_{i}(x):\n    return {{'k': x * {i}, 'v': [{i}, {i + 1}]}}" for i in range(24)]
        return "```python\n" + "\n".join(lines) + "\n```"
    return json.dumps({"rows": [{"id": i, "name": f"item {i}", "ok": i % 2 == 0, "score": i * 1.5}
                                for i in range(40)]}, indent=1)


def conversation(target_tokens: int, seed: int = 7) -> list[dict]:
    """About `target_tokens` o200k tokens (≈ 2.6 characters a token in this mix)."""
    rng = random.Random(seed)
    messages = [{"role": "system", "content": "You are a careful assistant."}]
    chars, index = 0, 0
    while chars < target_tokens * 2.6:
        text = block(rng, index)
        messages.append({"role": "user" if index % 2 == 0 else "assistant", "content": text})
        chars += len(text)
        index += 1
    if messages[-1]["role"] != "user":
        messages.append({"role": "user", "content": "And now?"})
    return messages
