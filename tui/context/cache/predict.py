"""Cache prediction for one request, against the previous one or every prompt held, and the report after.

Before sending: `cache_prefix` compares the request with the previous one alone; `predict_prefix` asks
the server's model (llamacpp_cache.LlamaCppCache, or provider_cache.ProviderCache for hosted APIs) what
it will reuse, names the earlier request the reuse comes from, and classes the first divergent token
against that request. After the reply:
`held_prompt` turns the request and the server's figures into what the model records next, and
`cache_report` compares the prediction with the server's `cache_n` / `cached_tokens`.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field

from tui.context.cache.prefix import CachePrefix, RequestShape, common_prefix_length, predict_cached, token_start
from tui.context.cache.causes import CauseClass, Cause, classify, excerpt
from tui.context.cache.history import HeldPrompt, Shared, is_summary_call, request_name, shared_prefix
from tui.context.cache.rules import BREAKPOINTS, UNITS, rule_for, rule_known
from tui.context.document import Document
from tui.context.json_types import JSONObject
from tui.context.cache.llamacpp import LlamaCppCache
from tui.context.cache.providers import ProviderCache

UNMODELLED = "server state not modelled"  # a report's class when the server held more or less than modelled
RULE_UNKNOWN = "cache rule not known"  # a report's class when there was no rule to predict with


def cache_prefix(previous: RequestShape | None, current: RequestShape, document: Document,
                 rule: str = "llama.cpp") -> CachePrefix:
    """The prefix `current` shares with the previous request, and what `rule` reuses of it."""
    total = current.tokens.total
    if previous is None:
        return CachePrefix(0, 0, total, None, None, "first request: nothing cached yet", 0, rule, CauseClass.FIRST,
                           None, "")
    boundary = common_prefix_length(previous.text, current.text)
    shared = min(current.tokens.tokens_before(boundary), previous.tokens.total)
    cause = classify(previous, current, document, boundary)
    return CachePrefix(boundary, shared, total, cause.message, cause.span_kind, cause.text,
                       _cached_after(rule, previous, current, shared), rule, cause.kind,
                       diverges=excerpt(current.text, at := token_start(current.tokens, shared)),
                       diverged=excerpt(previous.text, at))


def _cached_after(rule: str, previous: RequestShape, current: RequestShape, shared: int) -> int:
    """What `rule` reuses when the previous request is the only one sent: rules that read only stored
    units or marked breakpoints ask the provider model (with that one request), the others count the prefix."""
    if rule_for(rule).kind not in (BREAKPOINTS, UNITS):
        return predict_cached(rule, shared, current.tokens.total)
    model = ProviderCache(rule)
    model.record(HeldPrompt(1, previous, previous.tokens.total))
    return model.predict(current).cached


def predict_prefix(server: LlamaCppCache | ProviderCache, current: RequestShape, document: Document,
                   rule: str, now: float | None = None) -> CachePrefix:
    """What `server` will reuse of `current`, where it comes from, and why the rest is not reused."""
    if isinstance(server, LlamaCppCache):
        found = server.predict(current)
        source = (found.source.shared, found.source.place) if found.source else None
        candidates = [(c.number, c.place, c.shared.tokens) for c in found.candidates]
        cached, write, best_effort, lifetime = found.cached, 0, False, ""
        notes = list(found.notes)
    else:
        provided = server.predict(current, now)
        source = (provided.source.shared, "provider cache") if provided.source else None
        candidates = [(c.number, "provider cache", c.shared.tokens) for c in provided.candidates]
        cached, write, best_effort = provided.cached, provided.write, provided.best_effort
        lifetime = provided.write_lifetime
        notes = list(provided.notes)
    held = _held(server)
    source = source if cached > 0 else None  # a prompt sharing nothing reusable is no source
    shared, place = source if source else (_best(candidates, held, current), "")
    prefix = _explained(held.get(shared.number) if shared else None, shared, current, document, rule, cached)
    if source is None and shared is not None:  # nothing is reused: explain against the closest prompt held
        notes.append(f"nothing is reused; compared with {request_name(shared.number)}, the held prompt closest to it")
        prefix.source = None
    prefix.place, prefix.candidates, prefix.notes = place, candidates, notes
    prefix.write, prefix.write_lifetime, prefix.best_effort = write, lifetime, best_effort
    return prefix


def _held(server: LlamaCppCache | ProviderCache) -> dict[int, HeldPrompt]:
    if isinstance(server, ProviderCache):
        return {h.number: h for h in server.held}
    found = {s.held.number: s.held for s in server.slots if s.held is not None}
    return found | {h.number: h for h in server.saved}


def _best(candidates: list[tuple[int, str, int]], held: dict[int, HeldPrompt], current: RequestShape) -> Shared | None:
    """Without a source, the held prompt sharing the most explains what was missed."""
    best = max(candidates, key=lambda c: c[2], default=None)
    return shared_prefix(held[best[0]], current, 0) if best and best[0] in held else None


def _explained(held: HeldPrompt | None, shared: Shared | None, current: RequestShape, document: Document,
               rule: str, cached: int) -> CachePrefix:
    total = current.tokens.total
    if held is None or shared is None:
        return CachePrefix(0, 0, total, None, None, "nothing the server holds shares this prompt", cached, rule,
                           CauseClass.FIRST)
    cause = _summary_cause(held) or _reply_cause(held, shared) or classify(held.shape, current, document,
                                                                          shared.chars)
    return CachePrefix(shared.chars, shared.tokens, total, cause.message, cause.span_kind, cause.text, cached, rule,
                       cause.kind, held.number, in_reply=shared.in_reply,
                       diverges=excerpt(current.text, at := token_start(current.tokens, shared.tokens)),
                       diverged=excerpt(held.text, at))


def _summary_cause(held: HeldPrompt) -> Cause | None:
    """The cause when the prompt closest to this one is ctxpane's own summary call: it took the slot."""
    if not is_summary_call(held.number):
        return None
    return Cause(CauseClass.SUMMARY, "ctxpane's own summary call was computed last in this slot: only what its prompt "
                          "shares with this one is reused")


def _reply_cause(held: HeldPrompt, shared: Shared) -> Cause | None:
    """The cause when the whole earlier prompt is shared: how far its reply carries on."""
    if shared.chars < len(held.shape.text) or held.generated <= 1:
        return None
    if not held.reply_known:
        return Cause(CauseClass.REASONING, f"the reply of {request_name(held.number)} had reasoning or tool calls: "
                     "the template writes it back in another form than it was generated")
    kept = held.generated - 1  # what a llama.cpp slot keeps of it; a provider's unit holds it all
    if shared.in_reply >= kept:
        return Cause(CauseClass.APPENDED, f"none: {request_name(held.number)} is reused whole, with its reply")
    return Cause(CauseClass.REPLY, f"the reply of {request_name(held.number)} is re-sent in another form than "
                 f"generated (after {shared.in_reply} of its tokens)")


# -- after the reply ---------------------------------------------------------------------------------------
def _count(value: object) -> int | None:
    """A token count as stored or reported; None for anything else (a figure from an imported or odd record)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def held_prompt(number: int, shape: RequestShape, reply: JSONObject | None = None, usage: JSONObject | None = None,
                timings: JSONObject | None = None, sent_at: float | None = None) -> HeldPrompt:
    """A request as the server computed it, from the reply and the server's own figures."""
    reply, usage, timings = reply or {}, usage or {}, timings or {}
    prompt = _count(usage.get("prompt_tokens"))
    evaluated = _count(timings.get("prompt_n"))
    if prompt is None and evaluated is not None:
        prompt = evaluated + (_count(timings.get("cache_n")) or 0)
    generated = _count(timings.get("predicted_n"))
    generated = generated if generated is not None else (_count(usage.get("completion_tokens")) or 0)
    pieces = reply.get("generated")
    known = pieces is not None or not (reply.get("reasoning") or reply.get("tool_calls"))
    text = "".join(pieces) if pieces is not None else (reply.get("content") or "")
    return HeldPrompt(number, shape, prompt if prompt is not None else shape.tokens.total, generated, text,
                      tuple(pieces) if pieces is not None else None, known, sent_at)


@dataclass
class CacheReport:
    predicted: int
    reported: int | None
    agrees: bool  # within one token
    cause_class: str
    explanation: str
    server_divergent_token: int | None = None  # the first token the server evaluated (= its cached count)
    where: str = ""  # the message and text at that token in this request
    notes: list[str] = field(default_factory=list)

    @property
    def difference(self) -> int | None:
        return None if self.reported is None else self.reported - self.predicted


def cache_report(prefix: CachePrefix, reported: int | None, current: RequestShape, document: Document,
                 reported_prompt: int | None = None, diagnostics: object = None) -> CacheReport:
    """The prediction made before sending, against what the server says it reused (and, where the provider says
    why it missed, its reason beside the predicted cause)."""
    notes = [] if reported_prompt in (None, current.tokens.total) else [
        f"the server counted {reported_prompt} prompt tokens, ctxpane {current.tokens.total}: "
        "token positions are off by the difference"]
    said = provider_diagnosis(diagnostics)
    if said:
        notes.append(f"{said}; ctxpane's predicted cause: {prefix.cause}")
    if reported is None:
        return CacheReport(prefix.predicted_cached, None, False, "", "the server did not report cached tokens",
                           notes=notes)
    if not rule_known(prefix.rule):
        return CacheReport(prefix.predicted_cached, reported, False, RULE_UNKNOWN,
                           f"the server reused {reported} tokens; its cache rule is not known, so nothing was "
                           "predicted", reported, _where(current, document, reported), notes)
    where = _where(current, document, reported)
    difference = reported - prefix.predicted_cached
    if abs(difference) <= 1:
        return CacheReport(prefix.predicted_cached, reported, True, prefix.cause_class,
                           f"as predicted: {prefix.cause}", reported, where, notes)
    kind, text = _disagreement(prefix, difference)
    return CacheReport(prefix.predicted_cached, reported, False, kind, text, reported, where, notes)


MISS_REASONS = {  # Anthropic's cache_miss_reason types (cache diagnostics), as the pane says them
    "model_changed": "the model changed", "system_changed": "the system prompt changed",
    "tools_changed": "the tools changed", "messages_changed": "the messages changed",
    "previous_message_not_found": "the previous message was not found (its fingerprint expired or was never kept)",
    "unavailable": "its diagnostics were unavailable",
}


def provider_diagnosis(diagnostics: object) -> str:
    """The provider's own word on a cache miss (`diagnostics.cache_miss_reason`), or '' when it gave none.
    A type not in MISS_REASONS is named as unrecognised, never shown as it came."""
    reason = diagnostics.get("cache_miss_reason") if isinstance(diagnostics, dict) else None
    if not isinstance(reason, dict):
        return ""
    kind = reason.get("type")
    text = MISS_REASONS.get(kind, "a reason ctxpane does not know") if isinstance(kind, str) else \
        "a reason ctxpane does not know"
    missed = reason.get("cache_missed_input_tokens")
    tokens = f", {missed} input tokens missed" if isinstance(missed, int) and not isinstance(missed, bool) else ""
    return f"the provider says the cache missed because {text}{tokens}"


def _disagreement(prefix: CachePrefix, difference: int) -> tuple[str, str]:
    if difference < 0 and prefix.in_reply and abs(-difference - prefix.in_reply) <= 1:
        return CauseClass.REPLY, (f"the server did not reuse the {prefix.in_reply} tokens of "
                                  f"{request_name(prefix.source)}'s reply: it generated other tokens than the text "
                                  "re-sent (a leading space it strips, another tokenization); asking for logprobs lets "
                                  "ctxpane see the tokens generated")
    if difference < 0:
        return UNMODELLED, (f"the server reused {-difference} tokens fewer than modelled: another client used its "
                            "slot, its prompt cache dropped the prompt, it restarted, or it tokenizes differently")
    return UNMODELLED, (f"the server reused {difference} tokens more than modelled: it held a prompt this session "
                        "did not send (another client, an earlier session), or its rule reuses more")


def _where(current: RequestShape, document: Document, token: int) -> str:
    """The message, kind and text at token number `token` of `current`."""
    if token >= current.tokens.total:
        return "the end of the prompt"
    at = token_start(current.tokens, token)
    spans = document.spans
    if not spans:
        return f"character {at}"
    span = spans[max(0, bisect_right([s.start for s in spans], at) - 1)]
    places = current.places or []
    owner = "no message" if span.message is None else \
        f"message #{places[span.message]} ({current.message_roles[span.message]})" \
        if span.message < min(len(places), len(current.message_roles)) and places[span.message] >= 0 else \
        f"message {span.message}"
    return f"{owner}, {span.kind}: {excerpt(current.text, at)!r}"
