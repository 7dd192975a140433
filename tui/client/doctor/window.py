"""`ctxpane doctor`'s window check: send a request just over the server's window and see what it does.

Two probes, both sized with the server's own counts (two small calibration requests measure what
one filler word costs, so no tokenizer is assumed):
- a prompt OVER tokens past the window: does the server refuse it (honest), cut it silently (it
  reports fewer prompt tokens than it was sent), or take it all (its window figure is wrong)?
- a prompt just under the window with a reply that must run into it: does the reply stop at the
  window, or does the server shift its context (drop the oldest tokens) to keep writing?
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tui.context.json_types import JSONObject

from tui.client.doctor.report import Status
from tui.client.errors import BadRequest, ClientError
from tui.client.figures import reported_from_reply
from tui.client.http import OpenAIClient
from tui.client.reply import Reply
from tui.client.server_info import ServerInfo

MAX_AUTO = 8_192  # larger windows are probed only when asked (--window-check on): it sends that many tokens
OVER = 16  # tokens past the window
UNDER = 8  # tokens under the window for the reply probe
REPLY = 16  # reply tokens asked for there (UNDER + 8: past the window)
FILLER = " apple"
SMALL, LARGE = 8, 72  # filler words of the two calibration requests


@dataclass(frozen=True)
class Calibration:
    base: float  # tokens of the request without filler
    per_word: float

    def words_for(self, tokens: int) -> int:
        return max(1, math.ceil((tokens - self.base) / self.per_word))

    def tokens_for(self, words: int) -> int:
        return round(self.base + self.per_word * words)


def _body(words: int, max_tokens: int, kind: str) -> JSONObject:
    messages = [{"role": "system", "content": "Remember the code word TANGERINE."},
                {"role": "user", "content": "Text:" + FILLER * words + "\nWhat is the code word?"}]
    body = {"messages": messages, "max_tokens": max_tokens, "temperature": 0}
    if kind == "llama.cpp" and max_tokens > 1:
        body["ignore_eos"] = True  # the reply must reach the window, not end on its own
    return body


def _received(reply: Reply) -> int | None:
    return reported_from_reply(reply).received()[0]


async def calibrate(client: OpenAIClient, kind: str) -> Calibration | None:
    first = _received(await client.chat(_body(SMALL, 1, kind)))
    second = _received(await client.chat(_body(LARGE, 1, kind)))
    if first is None or second is None or second <= first:
        return None
    per_word = (second - first) / (LARGE - SMALL)
    return Calibration(first - SMALL * per_word, per_word)


async def prompt_probe(client: OpenAIClient, calibration: Calibration, window: int, kind: str) -> JSONObject:
    words = calibration.words_for(window + OVER)
    expected = calibration.tokens_for(words)
    data: JSONObject = {"sent_prompt_tokens": expected}
    try:
        reply = await client.chat(_body(words, 1, kind))
    except BadRequest as exc:
        return {**data, "outcome": "errors", "server_said": exc.message,
                "server_prompt_tokens": getattr(exc, "n_prompt_tokens", None),
                "server_window": getattr(exc, "n_ctx", None)}
    received = _received(reply)
    data["received_prompt_tokens"] = received
    if received is None:
        return {**data, "outcome": "unknown"}
    if received < expected - max(2, expected // 200):  # a little slack for the calibration's rounding
        return {**data, "outcome": "truncates", "dropped": expected - received}
    return {**data, "outcome": "accepts"}


async def reply_probe(client: OpenAIClient, calibration: Calibration, window: int, kind: str) -> JSONObject:
    words = calibration.words_for(window - UNDER)
    try:
        reply = await client.chat(_body(words, REPLY, kind))
    except BadRequest as exc:
        return {"outcome": "refuses", "server_said": exc.message}
    reported = reported_from_reply(reply)
    prompt, completion = reported.received()[0], reported.completion_tokens
    data = {"prompt_tokens": prompt, "completion_tokens": completion, "asked": REPLY,
            "finish_reason": reply.finish_reason}
    if prompt is None or completion is None:
        return {**data, "outcome": "unknown"}
    if prompt + completion > window:
        return {**data, "outcome": "shifts"}
    if reply.finish_reason == "length" and prompt + completion >= window - 1:
        return {**data, "outcome": "stops"}
    return {**data, "outcome": "inconclusive"}  # the model ended its reply before the window


PROMPT_TEXT = {"errors": "refuses it with an error (nothing is cut silently)",
               "truncates": "CUTS IT SILENTLY: it processed {received_prompt_tokens} of {sent_prompt_tokens} "
                            "tokens, ~{dropped} dropped without a word",
               "accepts": "takes all {received_prompt_tokens} tokens: its window is larger than the figure used",
               "unknown": "answers without a prompt token count: cannot tell"}
REPLY_TEXT = {"stops": "a reply that reaches the window stops there",
              "shifts": "a reply that reaches the window goes on: the server SHIFTS its context, dropping the "
                        "oldest tokens ({prompt_tokens} + {completion_tokens} past {window})",
              "refuses": "a request whose reply may not fit is refused",
              "inconclusive": "the reply probe ended before the window (inconclusive)",
              "unknown": "the reply probe got no token counts (inconclusive)"}


def verdict(prompt: JSONObject, reply: JSONObject, window: int) -> tuple[Status, str]:
    status: Status = "warn" if prompt["outcome"] in ("truncates", "accepts") or reply["outcome"] == "shifts" else "ok"
    text = (f"over the window: {PROMPT_TEXT[prompt['outcome']].format(**prompt)}; "
            f"{REPLY_TEXT[reply['outcome']].format(window=window, **reply)}")
    return status, text


async def check_window(client: OpenAIClient, info: ServerInfo, mode: str = "auto") -> tuple[Status, str, JSONObject]:
    """(status, detail, data) of the window check; `mode` is auto, on or off."""
    window = info.window
    if mode == "off":
        return "skip", "not asked for (--window-check off)", {}
    if window is None:
        return "skip", "the server's window is unknown: nothing to probe", {}
    where = f"{window.tokens} tokens ({window.source}: {window.detail})"
    data: JSONObject = {"window": window.to_dict()}
    if mode == "auto" and window.tokens > MAX_AUTO:
        return "skip", f"the window is {where}: probing it sends that many tokens; ask with --window-check on", data
    try:
        calibration = await calibrate(client, info.kind)
        if calibration is None:
            return "skip", "the server reports no usable prompt token counts: nothing to measure with", data
        data["prompt"] = await prompt_probe(client, calibration, window.tokens, info.kind)
        data["reply"] = await reply_probe(client, calibration, window.tokens, info.kind)
    except ClientError as exc:
        return "fail", f"the window probe failed: {exc}", data
    status, text = verdict(data["prompt"], data["reply"], window.tokens)
    return status, f"window {where}: {text}", data
