"""What the client reads for the cache model: llama.cpp's /props and /slots, and the generated tokens
(logprobs) of a reply, each checked against its schema (loopback servers that answer right and wrong)."""

import pytest

from fault_server import FaultServer
from test_client_hostile import client_for, BODY
from tui.client.errors import MalformedAnswer, MalformedChunk
from tui.client.reply import ReplyAssembler
from tui.client.server_cache import read_cache_facts, slot_context
from tui.context.cache.history import HeldPrompt
from tui.context.cache.llamacpp import LlamaCppCache
from test_cache_model import shape


@pytest.fixture()
def server():
    with FaultServer(delay=0.05) as running:
        yield running


async def facts_of(server, scenario):
    async with client_for(f"{server.url}/{scenario}/v1") as client:
        return await read_cache_facts(client)


async def test_props_and_slots_become_the_model_settings(server):
    found = await facts_of(server, "slots")
    assert (found.total_slots, found.n_ctx, len(found.slots), slot_context(found)) == (2, 4096, 2, 4096)
    config = found.config()
    assert (config.slots, config.cache_tokens, config.cache_ram_mib, config.bytes_per_token) == (2, 4096, 8192, None)
    model = LlamaCppCache(config)
    # slot 0 holds 410 tokens on the server; the model's slot 0 holds 400 (+ 11 generated - 1 = 410)
    model.record(HeldPrompt(1, shape("a" * 400), 400, 11))
    assert found.compare(model) == []
    model = LlamaCppCache(config)
    model.record(HeldPrompt(1, shape("a" * 400), 400, 1))
    assert found.compare(model) == ["slot 0 holds 410 tokens, the model 400: another client used it"]


async def test_slots_turned_off_is_a_note_not_an_error(server):
    found = await facts_of(server, "slotsoff")
    assert found.slots == [] and "--no-slots" in found.notes[0]


@pytest.mark.parametrize("scenario, field", [("slotsbad", "id"), ("slotsmany", "total_slots")])
async def test_slots_of_the_wrong_shape_are_refused(server, scenario, field):
    with pytest.raises(MalformedAnswer) as info:
        await facts_of(server, scenario)
    assert field in str(info.value)


async def test_generated_tokens_are_kept_as_the_server_sent_them(server):
    assembler = ReplyAssembler()
    async with client_for(f"{server.url}/logprobs/v1") as client:
        reply = await client.chat(BODY, assembler)
    # the content lost the first token's leading space; the generated tokens keep it
    assert reply.content == "hello wörld" and reply.generated == [" hello", " w", "örld"]
    assert reply.to_record()["generated"] == [" hello", " w", "örld"]


async def test_a_token_byte_out_of_range_is_a_malformed_chunk(server):
    async with client_for(f"{server.url}/logprobsbad/v1") as client:
        with pytest.raises(MalformedChunk) as info:
            await client.chat(BODY, ReplyAssembler())
    assert "bytes" in str(info.value)


def test_a_reply_without_logprobs_records_no_generated_tokens():
    from tui.client.reply import Reply
    assert "generated" not in Reply(content="x").to_record()
