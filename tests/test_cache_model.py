"""The llama.cpp cache model on prompts whose tokens are counted by hand (one token per character).

Each scenario follows llama.cpp's rules step by step in its comments; tests/test_cache_server.py checks
the same model against the real server.
"""

from array import array

import pytest

from tui.context.cache.prefix import RequestShape
from tui.context.cache.history import HeldPrompt, shared_prefix
from tui.context.document import Document, Span
from tui.context.cache.llamacpp import LlamaCppCache, LlamaCppConfig
from tui.context.tokens.counting import token_index


class OneTokenPerCharacter:
    name = "chars"

    def plain_starts(self, text):
        return array("q", range(len(text))), False

    def special_count(self, text):
        return 1

    def specials(self):
        return set()


def shape(text: str) -> RequestShape:
    document = Document(text, [Span(0, len(text), 0, "content")], ["user"])
    return RequestShape(text, token_index(document, OneTokenPerCharacter(), []), ["m0"], [text], ["user"])


def held(number: int, text: str, generated: int = 1, **reply) -> HeldPrompt:
    return HeldPrompt(number, shape(text), len(text), generated, **reply)


def run(model: LlamaCppCache, *texts: str):
    """Record each text as one request (one generated token: the slot keeps exactly the prompt)."""
    for number, text in enumerate(texts, len(model.saved) + 1 + sum(s.held is not None for s in model.slots)):
        model.record(held(number, text))


def test_going_back_loads_the_earlier_prompt_from_the_host_cache():
    model = LlamaCppCache()
    model.record(held(1, "a" * 100))
    # B shares nothing with the slot's A: chosen by LRU, A is saved to the cache, nothing better to load
    first_b = model.record(held(2, "b" * 100))
    assert (first_b.chosen_by, first_b.cached, [h.number for h in model.saved]) == ("LRU", 0, [1])
    # A + 20 shares nothing with the slot's B: LRU again; B is saved, then A (keeps 100/100 of itself and
    # covers 100/120 of the request, both better than the slot's 0) is loaded and leaves the cache
    back = model.predict(shape("a" * 100 + "x" * 20))
    assert (back.cached, back.source.number, back.source.place) == (100, 1, "prompt cache -> slot 0")
    assert [h.number for h in model.saved] == [1]  # predict changed nothing


def test_similarity_above_the_threshold_keeps_the_slot():
    model = LlamaCppCache()
    model.record(held(1, "a" * 100))
    extended = model.predict(shape("a" * 100 + "x" * 20))  # 100/120 = 0.83 > 0.10, keeps 100/100 >= 0.5
    assert (extended.chosen_by, extended.cached, extended.source.place) == ("similarity", 100, "slot 0")
    tenth = model.predict(shape("a" * 10 + "z" * 90))  # 10/100 = 0.10 is not above 0.10: LRU
    assert (tenth.chosen_by, tenth.cached) == ("LRU", 10)
    whole = model.predict(shape("a" * 100))  # the whole prompt again: its last token is evaluated again
    assert whole.cached == 99


def test_a_slot_keeping_less_than_half_swaps_in_a_better_cached_prompt():
    model = LlamaCppCache()
    model.record(held(1, "a" * 40 + "x" * 60))
    # Y shares 40 of X's 100: 0.40 > 0.10 picks the slot, but it keeps 0.40 < 0.5 of X: X is saved;
    # nothing cached beats the slot's own 0.40/0.40, so 40 tokens are reused
    model.record(held(2, "a" * 40 + "y" * 60))
    assert [h.number for h in model.saved] == [1]
    # Z shares 40 with Y (keep 0.40 < 0.5): Y is saved; X shares 90 (keep 0.90 > 0.40, covers 0.90 > 0.40)
    found = model.predict(shape("a" * 40 + "x" * 50 + "z" * 10))
    assert (found.chosen_by, found.cached, found.source.number) == ("similarity", 90, 1)
    assert found.source.place == "prompt cache -> slot 0"


@pytest.mark.parametrize("config", [
    LlamaCppConfig(cache_ram_mib=-1, cache_tokens=250),  # --cache-ram -1: only the n_ctx token limit
    LlamaCppConfig(cache_ram_mib=1, cache_tokens=100, bytes_per_token=4096),  # 1 MiB / 4096 B = 256 tokens
])
def test_the_cache_drops_its_oldest_prompts_past_its_limits(config):
    model = LlamaCppCache(config)
    run(model, "a" * 100, "b" * 100, "c" * 100, "d" * 100)
    # D saves C: [A, B, C] = 300 tokens, over 250 (and 300 x 4096 B > 1 MiB): A, the oldest, is dropped
    assert [h.number for h in model.saved] == [2, 3]
    back = model.predict(shape("a" * 100 + "x"))
    assert back.cached == 0 and 1 not in [c.number for c in back.candidates]


def test_an_entry_past_the_guaranteed_limit_is_marked_uncertain():
    # 8192 MiB and an unknown state size: the limit is somewhere past 150 tokens, nothing is dropped
    model = LlamaCppCache(LlamaCppConfig(cache_tokens=150))
    run(model, "a" * 100, "b" * 100, "c" * 100)  # cache [A, B]: 200 tokens, A beyond the newest 150
    back = model.predict(shape("a" * 100 + "x"))
    assert back.cached == 100 and not back.source.certain and "may have been dropped" in back.notes[0]


def test_idle_slots_are_saved_once_and_replace_what_they_contain():
    model = LlamaCppCache(LlamaCppConfig(slots=2))
    model.record(held(1, "a" * 100))  # slot 0 (both empty: LRU, lowest id)
    model.record(held(2, "b" * 100))  # slot 1 (empty, never used); idle slot 0 saved: [A]
    model.record(held(3, "b" * 150))  # slot 1 by similarity; idle slot 0 is already in the cache whole
    assert [h.number for h in model.saved] == [1]
    model.record(held(4, "a" * 150))  # slot 0 by similarity; idle slot 1 (B+) saved: [A, B+]
    model.record(held(5, "c" * 100))  # LRU: slot 1 (B+, already cached); idle slot 0 (A+) contains A: A dropped
    assert [h.number for h in model.saved] == [3, 4]


def test_unified_kv_clears_the_idle_slots_it_saves():
    model = LlamaCppCache(LlamaCppConfig(slots=2, clear_idle_slots=True))
    model.record(held(1, "a" * 100))
    model.record(held(2, "b" * 100))  # slot 0 saved and cleared
    assert model.slots[0].held is None
    again = model.predict(shape("a" * 100 + "x"))  # slot 0 is empty and LRU: A comes back from the cache
    assert (again.cached, again.source.place) == (100, "prompt cache -> slot 0")


def test_no_prompt_cache_means_only_the_slot():
    model = LlamaCppCache(LlamaCppConfig(cache_ram_mib=0))
    run(model, "a" * 100, "b" * 100)
    assert model.saved == [] and model.predict(shape("a" * 100 + "x")).cached == 0


def test_the_reply_counts_as_far_as_the_generated_tokens_are_repeated():
    prompt = "P" * 10
    current = shape(prompt + "hello!")
    # the server said what it generated: 'h', 'el', 'lo'. 'el' is two tokens of the new prompt (one per
    # character here), so the reuse stops after 'h'
    exact = held(1, prompt, 3, reply_text="hello", reply_pieces=("h", "el", "lo"))
    assert shared_prefix(exact, current).tokens == 11 and shared_prefix(exact, current).in_reply == 1
    # only the reply text is known: assumed re-tokenized as generated, at most the 3 generated tokens
    assumed = held(1, prompt, 3, reply_text="hello")
    found = shared_prefix(assumed, current)
    assert (found.tokens, found.in_reply, found.assumed) == (13, 3, True)
    # reasoning or tool calls: written back in another form, nothing of the reply counts
    unknown = held(1, prompt, 3, reply_text="hello", reply_known=False)
    assert shared_prefix(unknown, current).tokens == 10
    # a slot keeps all generated tokens but the last: two of them
    model = LlamaCppCache()
    model.record(exact)
    assert model.predict(shape(prompt + "hello!")).cached == 11
    model = LlamaCppCache()
    model.record(assumed)
    assert model.predict(shape(prompt + "hello!")).cached == 12


def test_a_server_that_said_it_processed_no_prompt_tokens_does_not_break_the_next_prediction():
    """A lying server's usage.prompt_tokens = 0 (and no reply tokens): the slot then 'holds' 0 tokens. The next
    request, which shares nothing and so takes the slot by LRU, must be predicted (nothing reused), not crash."""
    from tui.context.cache.predict import held_prompt

    model = LlamaCppCache(LlamaCppConfig())
    model.record(held_prompt(1, shape("hello there"), {"content": ""}, {"prompt_tokens": 0, "completion_tokens": 0}))
    prediction = model.predict(shape("something else"))
    assert prediction.cached == 0 and prediction.chosen_by == "LRU"
