"""The client and doctor against the real llama.cpp server (../shared/server)."""

import asyncio
import json

import pytest

from server_conversations import CONVERSATIONS
from tui.client.doctor.server import server_template
from tui.client.endpoint import Endpoint
from tui.client.errors import ContextOverflow
from tui.client.http import OpenAIClient
from tui.client.reply import ReplyAssembler
from tui.client.server_info import probe
from tui.client.server_tokenizer import ServerTokenizer
from tui.context.assemble import assemble
from tui.context import get_tokenizer

pytestmark = pytest.mark.server


def run(coro):
    return asyncio.run(coro)


async def with_client(url, fn):
    async with OpenAIClient(Endpoint(url, "tiny-qwen3", "CTXPANE_NO_KEY")) as client:
        return await fn(client)


def test_probe_finds_llamacpp(llama_server):
    info = run(with_client(llama_server, probe))
    assert info.kind == "llama.cpp" and info.n_ctx == 8192
    assert "<|im_start|>" in info.chat_template and info.eos_token == "<|im_end|>"
    assert info.can_tokenize and info.can_apply_template


def test_server_template_and_tokenizer_match_server_on_varied_conversations(llama_server):
    async def check(client):
        info = await probe(client)
        template, own = server_template(info)
        assert own
        server_tok = ServerTokenizer(client.endpoint)
        local_tok = get_tokenizer("qwen3")
        try:
            for name, (messages, tools) in CONVERSATIONS.items():
                body = {"messages": messages, **({"tools": tools} if tools else {})}
                prompt = (await client.post_json("/apply-template", body, at_root=True))["prompt"]
                usage = (await client.chat({**body, "max_tokens": 1, "temperature": 0})).prompt_tokens
                for tokenizer in (server_tok, local_tok):
                    snap = await asyncio.to_thread(assemble, messages, template, tokenizer, None, True, tools)
                    assert snap.document.text == prompt, name
                    assert snap.counts.total == usage, (name, tokenizer.name)
                    assert snap.counts.exact == (tokenizer is server_tok)  # qwen3 here is our guess
        finally:
            server_tok.close()
        return len(CONVERSATIONS)

    assert run(with_client(llama_server, check)) >= 10


def test_streaming_reply_and_usage(llama_server):
    async def go(client):
        assembler = ReplyAssembler()
        body = {"messages": [{"role": "user", "content": "hi"}], "stream": True, "max_tokens": 5,
                "temperature": 0}
        return await client.chat(body, assembler)

    reply = run(with_client(llama_server, go))
    assert reply.content.startswith("hello") and reply.finish_reason == "length"
    assert reply.prompt_tokens == 9 and reply.timings and "cache_n" in reply.timings


def test_context_overflow_is_typed(llama_server):
    async def go(client):
        huge = " ".join(["word"] * 9000)
        await client.chat({"messages": [{"role": "user", "content": huge}], "max_tokens": 1})

    with pytest.raises(ContextOverflow) as info:
        run(with_client(llama_server, go))
    assert info.value.n_ctx == 8192 and info.value.n_prompt_tokens > 8192


def test_doctor_reports_risk_and_cache(llama_server, run_cli):
    result = run_cli("doctor", llama_server, "--json")
    assert result.returncode == 1, result.stderr  # the control-token risk is a problem found
    report = json.loads(result.stdout)
    checks = {c["name"]: c for c in report["checks"]}
    assert checks["rendering"]["status"] == "ok"
    assert checks["token count"]["status"] == "ok"
    risk = checks["control tokens in user text"]
    assert risk["status"] == "warn" and "RISK" in risk["detail"]
    assert risk["data"]["prompt_tokens_with_marker"] < risk["data"]["engine_plain_text_count"]
    cache = checks["prompt cache"]
    assert cache["status"] == "ok" and cache["data"]["second_cached_tokens"] > 0
    assert report["server"]["kind"] == "llama.cpp" and report["server"]["n_ctx"] == 8192
    window = checks["context window"]  # just over 8192: refused; a reply reaching the window stops there
    assert window["status"] == "ok" and window["data"]["prompt"]["server_window"] == 8192
    assert window["data"]["reply"]["outcome"] == "stops"
    for api in ("Messages API (/messages)", "Responses API (/responses)"):  # the other APIs it serves, counted alike
        other = checks[api]
        assert other["status"] == "ok", other
        assert other["data"]["usage_prompt_tokens"] == other["data"]["engine"] == other["data"]["chat_prompt_tokens"]
    human = run_cli("doctor", llama_server, "--window-check", "off")  # checked once is enough
    assert "RISK" in human.stdout and "problems found" in human.stdout


def test_doctor_dead_url_exits_2(run_cli):
    import socket
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        result = run_cli("doctor", f"http://127.0.0.1:{port}")
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1 and "cannot connect" in result.stderr
