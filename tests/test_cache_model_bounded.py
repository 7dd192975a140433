"""The llama.cpp cache model holds no more than the server could: slots x the tokens one slot holds (its
n_ctx) times CONTEXTS_PER_SLOT where its own token limit is not known, however long the run."""

from __future__ import annotations

import pytest

from test_cache_model import held
from tui.context.cache.llamacpp import UNKNOWN_CONTEXT, LlamaCppCache, LlamaCppConfig, held_tokens


def held_size(model: LlamaCppCache) -> tuple[int, int]:
    """Tokens and prompts the model keeps: in its slots and in its host cache."""
    prompts = [slot.held for slot in model.slots if slot.held is not None] + model.saved
    return sum(held_tokens(prompt) for prompt in prompts), len(prompts)


@pytest.mark.parametrize("config", [
    LlamaCppConfig(slots=2, cache_tokens=4096),  # n_ctx known, the state size per token not: no token limit
    LlamaCppConfig(slots=1),  # nothing known
    LlamaCppConfig(slots=4, cache_tokens=2048, cache_ram_mib=-1),  # the token limit only
], ids=["mib-limit-unknown-size", "nothing-known", "token-limit"])
def test_many_requests_keep_the_held_size_bounded(config):
    model = LlamaCppCache(config)
    context = config.cache_tokens or UNKNOWN_CONTEXT
    bound = config.slots * LlamaCppCache.CONTEXTS_PER_SLOT * context
    sizes = []
    for number in range(1, 1201):  # distinct prompts: each one is chosen by LRU and saves the slot it takes
        text = chr(0x4E00 + number % 20_000) * (200 + number % 57)
        model.record(held(number, text))
        sizes.append(held_size(model))
    tokens, prompts = max(sizes)
    assert tokens <= bound + config.slots * context  # the host cache's share plus what the slots hold
    assert max(count for _, count in sizes) <= config.slots * (1 + LlamaCppCache.PROMPTS_PER_SLOT)
    assert sizes[-1][1] < 1200  # before: every prompt of the run was kept


def test_the_bound_keeps_the_newest_prompts_and_their_reuse():
    model = LlamaCppCache(LlamaCppConfig(slots=1, cache_tokens=1000))
    for number in range(1, 400):
        model.record(held(number, chr(0x4E00 + number) * 300))
    returning = model.predict(held(400, chr(0x4E00 + 398) * 300 + "x").shape)  # back to a recent prompt
    assert returning.source is not None and returning.source.number == 398 and returning.cached == 300
