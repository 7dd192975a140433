"""The checks of `ctxpane doctor`: does the engine's view of a server match what the server does?"""

from __future__ import annotations

from typing import Any, Coroutine, Iterator

from tui.context.assemble import assemble
from tui.context.document import first_difference
from tui.context.errors import TemplateRenderError
from tui.context.families.identity import SERVER
from tui.context.json_types import JSONObject, WireMessage
from tui.context.templates.library import ChatTemplate, plain_chatml, template_from_text

from tui.client.doctor.gateway import check_gateway_errors, check_replies, check_stream, hidden, upstream_text
from tui.client.doctor.report import Check, Report
from tui.client.errors import ClientError
from tui.client.http import OpenAIClient
from tui.client.schemas import Prompt, Tokenized
from tui.client.server_info import ServerInfo, probe
from tui.client.server_tokenizer import ServerTokenizer
from tui.client.doctor.window import check_window

SAMPLE_TOOLS: list[JSONObject] = [{"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather for a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"}},
                   "required": ["city"]}}}]
SAMPLE: list[WireMessage] = [
    {"role": "system", "content": "You are a concise assistant. Answer in one sentence."},
    {"role": "user", "content": "What's the weather in Zürich? 🌦"},
    {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "type": "function", "function": {
        "name": "get_weather", "arguments": "{\"city\": \"Zürich\"}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "{\"temp_c\": 14, \"sky\": \"rain — 雨\"}"},
    {"role": "assistant", "content": "It is 14 °C and raining in Zürich."},
    {"role": "user", "content": "Thanks! And tomorrow?"},
]
LONG_PREFIX = " ".join(f"Rule {i}: keep answers short and cite sources." for i in range(40))


def server_template(info: ServerInfo) -> tuple[ChatTemplate, bool]:
    """The server's own template when it has a Jinja one; else a built-in (estimate)."""
    if info.has_own_template:
        defaults = {"bos_token": info.bos_token, "eos_token": info.eos_token}
        return template_from_text(info.chat_template or "", f"server:{info.kind}", "server", kind=SERVER,
                                  **defaults), True
    return plain_chatml(), False  # assumed: no default system turn the server may not add


async def prompt_tokens(client: OpenAIClient, messages: list[WireMessage],
                        tools: list[JSONObject] | None = None) -> int | None:
    body: JSONObject = {"model": client.endpoint.model or "model", "messages": messages, "max_tokens": 1,
                        "temperature": 0}
    if tools:
        body["tools"] = tools
    reply = await client.chat(body)
    return reply.prompt_tokens


async def check_rendering(client: OpenAIClient, info: ServerInfo, template: ChatTemplate) -> tuple[Check, str]:
    try:
        ours = template.render(SAMPLE, tools=SAMPLE_TOOLS, add_generation_prompt=True)
    except TemplateRenderError as exc:
        return Check("rendering", "fail", f"the server's template rejects the sample conversation: {exc}"), ""
    if info.kind == "llama.cpp":
        theirs = (await client.post_json("/apply-template", {"messages": SAMPLE, "tools": SAMPLE_TOOLS},
                                         at_root=True, shape=Prompt)).prompt
    elif info.kind == "vllm":
        tokens = await client.post_json("/tokenize", {"model": info.model, "messages": SAMPLE,
                                                      "tools": SAMPLE_TOOLS, "add_generation_prompt": True},
                                        at_root=True, shape=Tokenized)
        ids = [t if isinstance(t, int) else t.id for t in tokens.tokens]
        theirs = (await client.post_json("/detokenize", {"model": info.model, "tokens": ids},
                                         at_root=True, shape=Prompt)).prompt
    else:
        return Check("rendering", "skip", f"{info.kind} cannot show its own rendering; nothing to compare"), ours
    diff = first_difference(ours, theirs, ("ours", "server"))
    if diff is None:
        return Check("rendering", "ok", f"identical to the server's rendering ({len(ours)} characters)"), ours
    return Check("rendering", "fail", f"differs from the server's at character {diff['index']} (line {diff['line']})",
                 diff), ours


async def check_tokens(client: OpenAIClient, info: ServerInfo, template: ChatTemplate) -> Check:
    if not info.can_tokenize or info.kind != "llama.cpp":
        return Check("token count", "skip", f"{info.kind} offers no tokenizer with offsets")
    tokenizer = ServerTokenizer(client.endpoint)
    try:
        snapshot = assemble(SAMPLE, template, tokenizer, tools=SAMPLE_TOOLS)
        whole = tokenizer.encode_whole(snapshot.document.text)
    finally:
        tokenizer.close()
    reported = await prompt_tokens(client, SAMPLE, SAMPLE_TOOLS)
    data = {"engine": snapshot.counts.total, "tokenize": whole, "usage_prompt_tokens": reported}
    if snapshot.counts.total == whole == reported:
        return Check("token count", "ok", f"engine {snapshot.counts.total} = /tokenize {whole} = usage {reported}", data)
    return Check("token count", "fail", f"engine {snapshot.counts.total}, /tokenize {whole}, usage {reported}", data)


async def other_apis(client: OpenAIClient, template: ChatTemplate) -> list[Check]:
    """The sample as a Messages and a Responses request, where the server offers them (llama.cpp does)."""
    from tui.client.doctor.apis import check_apis

    tokenizer = ServerTokenizer(client.endpoint)
    try:
        return await check_apis(client, SAMPLE, SAMPLE_TOOLS, template, tokenizer,
                                await prompt_tokens(client, SAMPLE, SAMPLE_TOOLS))
    finally:
        tokenizer.close()


async def check_eos_and_bos(client: OpenAIClient, info: ServerInfo, rendered: str) -> Check:
    problems, data = [], {"eos_token": info.eos_token, "bos_token": info.bos_token}
    if not (info.eos_token or info.bos_token):  # nothing to compare: say so rather than "end token None"
        return Check("end and start tokens", "skip", f"{info.kind} does not say its end and start tokens", data)
    if info.eos_token and rendered and info.eos_token not in rendered:
        problems.append(f"the template never writes the server's end token {info.eos_token!r}: replies may not stop")
    if info.bos_token and rendered.startswith(info.bos_token) and info.kind == "llama.cpp":
        ids = (await client.post_json("/tokenize", {"content": "x", "add_special": True}, at_root=True,
                                      shape=Tokenized)).tokens
        plain = (await client.post_json("/tokenize", {"content": "x", "add_special": False}, at_root=True,
                                        shape=Tokenized)).tokens
        if len(ids) > len(plain):
            problems.append("the template writes BOS and the server adds another: doubled BOS")
    if problems:
        return Check("end and start tokens", "warn", "; ".join(problems), data)
    return Check("end and start tokens", "ok", f"end token {info.eos_token!r} is written after turns; no doubled BOS",
                 data)


def marker_probe(template: ChatTemplate) -> str:
    specials = [s for s in template.special_strings() if "start" in s or s in ("[INST]", "<start_of_turn>")]
    return (specials[0] if specials else "<|im_start|>") + "system"


async def check_control_tokens(client: OpenAIClient, template: ChatTemplate) -> Check:
    probe_text = marker_probe(template)
    filler = "x" * len(probe_text)  # same characters, no marker: a baseline
    with_marker = await prompt_tokens(client, [{"role": "user", "content": probe_text}])
    baseline = await prompt_tokens(client, [{"role": "user", "content": filler}])
    tokenizer = ServerTokenizer(client.endpoint)
    try:  # the engine's count, with the user's text as plain text
        local = assemble([{"role": "user", "content": probe_text}], template, tokenizer)
    finally:
        tokenizer.close()
    data = {"probe": probe_text, "prompt_tokens_with_marker": with_marker, "engine_plain_text_count": local.counts.total,
            "prompt_tokens_baseline": baseline}
    if with_marker is not None and with_marker < local.counts.total:
        return Check("control tokens in user text", "warn",
                     f"RISK: the server turns {probe_text!r} typed by a user into a control token "
                     f"({with_marker} prompt tokens, {local.counts.total} if it were text): "
                     "user or tool text can forge turns", data)
    return Check("control tokens in user text", "ok", f"{probe_text!r} in user text stays plain text", data)


async def check_cache(client: OpenAIClient) -> Check:
    system = {"role": "system", "content": LONG_PREFIX}
    first = await client.chat({"messages": [system, {"role": "user", "content": "first question"}],
                               "max_tokens": 1, "temperature": 0})
    second = await client.chat({"messages": [system, {"role": "user", "content": "another one"}],
                                "max_tokens": 1, "temperature": 0})
    cached = second.cached_tokens
    data = {"first_prompt_tokens": first.prompt_tokens, "second_prompt_tokens": second.prompt_tokens,
            "second_cached_tokens": cached}
    if cached is None:
        return Check("prompt cache", "skip", "the server reports no cached-token figure", data)
    if cached > 0:
        return Check("prompt cache", "ok", f"the second request reused {cached} of {second.prompt_tokens} prompt tokens",
                     data)
    return Check("prompt cache", "warn", "a request sharing a long prefix reused nothing from the cache", data)


def window_text(info: ServerInfo) -> str:
    window = info.window
    return f"context {window.tokens} ({window.source}: {window.detail})" if window else "context unknown"


async def run_doctor(client: OpenAIClient, window_check: str = "auto") -> Report:
    info = await probe(client)
    client.endpoint.model = client.endpoint.model or info.model  # the model found is the model every check asks
    template, own = server_template(info)
    windows = [w.to_dict() for w in info.windows]
    behind = f" ({info.gateway} gateway: {upstream_text(info)})" if info.gateway else ""
    checks = [Check("server", "ok", f"{info.kind} {info.build}".strip() + f", model {info.model or '?'}{behind}, "
                    f"{window_text(info)}", {"kind": info.kind, "n_ctx": info.n_ctx, "windows": windows,
                                             "gateway": info.gateway, "upstream": info.upstream.model})]
    if info.gateway:
        return await _through_gateway(client, info, checks, windows, window_check)
    if not own:
        checks.append(Check("template", "warn", "the server does not expose its template: using built-in chatml; "
                            "renderings and counts are estimates"))
    if info.chat_template and info.template_language == "go":
        checks.append(Check("template", "warn", "the server's template is a Go template (Ollama), not Jinja",
                            {"template": info.chat_template}))
    for step in _steps(client, info, template, window_check):
        try:
            done = await step
            checks.extend(done if isinstance(done, list) else [done])
        except ClientError as exc:
            checks.append(Check("request", "fail", str(exc)))
    server = {"kind": info.kind, "model": info.model, "n_ctx": info.n_ctx, "build": info.build,
              "window": info.window.to_dict() if info.window else None, "windows": windows, "notes": info.notes}
    return Report(client.endpoint.base_url, server, checks)


async def _through_gateway(client: OpenAIClient, info: ServerInfo, checks: list[Check], windows: list[JSONObject],
                           window_check: str) -> Report:
    """What a gateway lets doctor check, and what it hides, each said plainly."""
    from tui.client.connect import assumed_template
    _, assumption = assumed_template(info)
    checks += hidden(info, assumption)
    for step in (check_stream(client), check_replies(client), check_cache(client), check_gateway_errors(client)):
        try:
            checks.append(await step)
        except ClientError as exc:
            checks.append(Check("request", "fail", str(exc)))
    try:
        checks.append(Check("context window", *await check_window(client, info, window_check)))
    except ClientError as exc:
        checks.append(Check("context window", "fail", str(exc)))
    server = {"kind": info.kind, "model": info.model, "n_ctx": info.n_ctx, "build": info.build, "gateway": info.gateway,
              "upstream": info.upstream.model, "window": info.window.to_dict() if info.window else None,
              "windows": windows, "notes": info.notes}
    return Report(client.endpoint.base_url, server, checks)


def _steps(client: OpenAIClient, info: ServerInfo, template: ChatTemplate,
           window_check: str = "auto") -> Iterator[Coroutine[Any, Any, Check | list[Check]]]:
    rendered: dict[str, Any] = {}

    async def rendering() -> Check:
        check, rendered["text"] = await check_rendering(client, info, template)
        return check

    yield rendering()
    yield check_tokens(client, info, template)

    async def eos() -> Check:
        return await check_eos_and_bos(client, info, rendered.get("text", ""))

    yield eos()
    if info.kind == "llama.cpp":
        yield check_control_tokens(client, template)
        yield other_apis(client, template)
    yield check_cache(client)

    async def window() -> Check:
        return Check("context window", *await check_window(client, info, window_check))

    yield window()
