"""`ctxpane doctor` through a gateway: what it can check there, and what the gateway hides, each said plainly.

Through a gateway the server's template and tokenizer are out of reach (LiteLLM answers 404 for
`/props`, `/tokenize`, `/apply-template`): those checks are skipped with the reason. What the gateway
does pass on is checked from its replies: streaming, usage, cached tokens, how replies end (no end token
leaking into the text), and the gateway's own errors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tui.client.doctor.report import Check
from tui.client.errors import ClientError
from tui.client.gateway import HIDDEN

if TYPE_CHECKING:
    from tui.client.http import OpenAIClient
    from tui.client.server_info import ServerInfo

PROBE = [{"role": "user", "content": "Say hello."}]
END_STRINGS = ("<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|end|>", "</s>", "<end_of_turn>", "<|return|>")


def hidden(info: "ServerInfo", assumption: str) -> list[Check]:
    """What a gateway hides, each as a skipped check that says why (these are not the user's problems)."""
    why = f"the {info.gateway} gateway hides the server's {HIDDEN}"
    return [Check("template", "skip", f"{why}: the server's template cannot be checked; ctxpane shows an "
                                      f"estimate ({assumption})", {"assumed": assumption}),
            Check("rendering", "skip", f"{why}: its rendering cannot be compared"),
            Check("token count", "skip", f"{why}: its tokenizer cannot be compared; the usage the gateway "
                                         "reports is what the pane compares with after each reply")]


def upstream_text(info: "ServerInfo") -> str:
    upstream = info.upstream
    if not upstream.model:
        return "the gateway does not say which model it forwards to"
    where = f" at {upstream.api_base} (not contacted)" if upstream.api_base else ""
    return f"forwards to {upstream.model}{where}, learned from {upstream.source}"


async def check_stream(client: "OpenAIClient") -> Check:
    """A streamed reply: chunks arrive and end with [DONE], usage comes with it, the end is reported."""
    deltas: list[str] = []
    reply = await client.chat({"messages": PROBE, "max_tokens": 8, "temperature": 0, "stream": True},
                              on_delta=lambda *parts: deltas.append("x"))
    data = {"deltas": len(deltas), "finish_reason": reply.finish_reason, "usage": reply.usage}
    problems = []
    if reply.usage is None or reply.prompt_tokens is None:
        problems.append("no usage came with the streamed reply (stream_options.include_usage): sent-vs-received "
                        "cannot be compared")
    if reply.finish_reason is None:
        problems.append("the stream said nothing about how the reply ended (no finish_reason)")
    if problems:
        return Check("streaming", "warn", "; ".join(problems), data)
    return Check("streaming", "ok", f"a streamed reply arrived ({len(deltas)} deltas, finish_reason "
                                    f"{reply.finish_reason!r}, usage {reply.prompt_tokens} prompt tokens)", data)


async def check_replies(client: "OpenAIClient") -> Check:
    """How replies end, as seen in them: a stop sequence honoured, and no end token left in the text."""
    reply = await client.chat({"messages": PROBE, "max_tokens": 24, "temperature": 0.8, "seed": 7})
    leaked = [s for s in END_STRINGS if s in reply.content]
    data = {"finish_reason": reply.finish_reason, "leaked": leaked}
    if leaked:
        return Check("end of replies", "warn", f"the reply's text contains {leaked[0]!r}: the end token is not "
                                               "handled between the server and the gateway", data)
    if reply.finish_reason not in ("stop", "length"):
        return Check("end of replies", "warn", f"finish_reason {reply.finish_reason!r}: not 'stop' or 'length'",
                     data)
    return Check("end of replies", "ok", f"replies end cleanly (finish_reason {reply.finish_reason!r}, no end "
                                         "token in the text); the server's end token itself is hidden", data)


async def check_gateway_errors(client: "OpenAIClient") -> Check:
    """The gateway's own answer to a model it does not serve: a readable error, not a hang or a page."""
    try:
        await client.chat({"model": "ctxpane-doctor-no-such-model", "messages": PROBE, "max_tokens": 1})
    except ClientError as exc:
        return Check("gateway errors", "ok", f"a model it does not serve gets a readable error: {exc}",
                     {"status": exc.status, "kind": exc.kind})
    return Check("gateway errors", "warn", "a model it does not list was answered anyway: the model name is "
                                           "not checked (the model list may not be what it serves)")
