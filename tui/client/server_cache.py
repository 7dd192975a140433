"""What a llama.cpp server reveals of its prompt cache: slots (/props, /slots), and what it keeps hidden.

/props gives the number of slots and the context size; /slots gives each slot's context and how many
tokens it holds after its last task (not which tokens). The host-memory prompt cache's size
(--cache-ram) and the state size per token appear only in the server's log, so they are settings here,
with llama.cpp's defaults. Answers are checked by schemas.py; an answer of the wrong shape is an error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tui.context.cache.llamacpp import LlamaCppCache, LlamaCppConfig, held_tokens

from tui.client.errors import ClientError, MalformedAnswer, NotJSON, TooLarge
from tui.client.http import OpenAIClient
from tui.client.schemas import Props, Slot, Slots

DEFAULT_CACHE_RAM_MIB = 8192  # llama.cpp's --cache-ram default (its --help, build b11669)


@dataclass
class CacheFacts:
    total_slots: int = 1
    n_ctx: int | None = None  # the server's context size (the prompt cache's token limit)
    slots: list[Slot] = field(default_factory=list)  # empty when /slots is off (--no-slots)
    build: str = ""
    notes: list[str] = field(default_factory=list)

    def config(self, cache_ram_mib: int = DEFAULT_CACHE_RAM_MIB, bytes_per_token: int | None = None,
               **other: Any) -> LlamaCppConfig:
        """The model's settings: what the server said, and what it cannot say (with llama.cpp's defaults)."""
        return LlamaCppConfig(slots=self.total_slots, cache_ram_mib=cache_ram_mib, cache_tokens=self.n_ctx or 0,
                              bytes_per_token=bytes_per_token, **other)

    def compare(self, model: LlamaCppCache) -> list[str]:
        """Where /slots disagrees with the model: a slot holding another number of tokens was used by
        someone else (another client, a request outside this session), so predictions on it are off."""
        found = []
        for slot in self.slots:
            if slot.id >= len(model.slots) or slot.n_prompt_tokens is None:
                continue
            held = model.slots[slot.id].held
            expected = held_tokens(held) if held else 0
            if slot.n_prompt_tokens != expected:
                found.append(f"slot {slot.id} holds {slot.n_prompt_tokens} tokens, the model {expected}: "
                             "another client used it")
        return found


async def read_cache_facts(client: OpenAIClient) -> CacheFacts:
    """/props and /slots of a llama.cpp server. Raises ClientError when /props cannot be had."""
    props = await client.get_json("/props", at_root=True, shape=Props)
    settings = props.default_generation_settings
    facts = CacheFacts(props.total_slots or 1, (settings.n_ctx if settings else None) or props.n_ctx,
                       build=props.build_info or "")
    if props.endpoint_slots is False:
        facts.notes.append("/slots is off on this server (--no-slots): the slots cannot be checked")
        return facts
    try:
        facts.slots = await client.get_json("/slots", at_root=True, shape=Slots)
    except (MalformedAnswer, TooLarge):
        raise
    except (NotJSON, ClientError) as exc:
        facts.notes.append(f"/slots could not be read: {exc}")
    return facts


def slot_context(facts: CacheFacts) -> int | None:
    """Each slot's own context size (n_ctx divided between slots unless the KV buffer is unified)."""
    sizes = {slot.n_ctx for slot in facts.slots if slot.n_ctx}
    return sizes.pop() if len(sizes) == 1 else None
