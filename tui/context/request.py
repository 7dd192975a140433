"""One request, fully assembled: fences, policy, document, tokens, forged blocks, cache prefix.

session messages -> fenced wire messages -> keep-all document (costs) -> policy plan ->
document actually sent -> counts, forged blocks, cache prefix against the previous request.
The fences are request_fences.py's; the wire as llama.cpp's server hands it to its template, llama_wire.py's
(applied by assemble.py to every rendering).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dataclasses import dataclass, field, replace

from tui.context.templates.tool_text import settle_tools, tool_texts
from tui.context.assemble import ServerReading, Snapshot, assemble, is_exact, total_without_tools
from tui.context.policy.truncation import LedgerEntry, Plan, PolicySettings, plan_truncation
from tui.context.policy.curated import Curation
from tui.context.trust import Standing, standing
from tui.context.policy.curated_request import curated_plan
from tui.context.cache.prefix import CachePrefix, RequestShape
from tui.context.cache.predict import cache_prefix, predict_prefix
from tui.context.cache.rules import OPENAI_MARK
from tui.context.document import Document
from tui.context.untrusted.fences import FenceStyle, FencedText, fence
from tui.context.hidden_tokens import HiddenTokens, hidden_tokens
from tui.context.llama_wire import template_tools
from tui.context.request_fences import FenceInfo, fence_escapes, fence_messages, split_fence_spans
from tui.context.errors import TemplateRenderError
from tui.context.images.tokens import MEDIA_MARKER, family_for, part_estimate, with_media_markers
from tui.context.json_types import JSONObject, WireMessage
from tui.context.messages import Message, content_text, image_parts
from tui.context.families.reasoning_rules import reasoning_notes
from tui.context.untrusted.forged_blocks import ForgedBlock, forged_blocks
from tui.context.tokens.counting import SegmentCache, TokenIndex, Tokenizer, count_tokens, token_index

if TYPE_CHECKING:
    from tui.context.cache.llamacpp import LlamaCppCache
    from tui.context.cache.providers import ProviderCache
    from tui.context.templates.library import ChatTemplate

SUMMARY_ID = "summary"
IMAGES_PART = "images (estimate)"
ESTIMATED_PARTS = frozenset({IMAGES_PART})  # breakdown rows that are estimates whatever the tokenizer


@dataclass
class RequestSettings:
    template: ChatTemplate
    tokenizer: Tokenizer
    variables: dict[str, Any] = field(default_factory=dict)
    tools: list[JSONObject] | None = None
    add_generation_prompt: bool = True
    policy: PolicySettings = field(default_factory=PolicySettings)
    fences: FenceStyle = field(default_factory=FenceStyle)
    cache_rule: str = "llama.cpp"
    exact: bool | None = None
    content_specials: bool = False  # the server reads control strings in message text as tokens (llama.cpp)
    model: str = ""  # the model asked for: picks the image family and the provider's reasoning rules
    base_url: str = ""
    # a last assistant message is the start of the reply, continued (Anthropic's prefill; llama.cpp's server too)
    prefill: bool = False

    @property
    def reading(self) -> ServerReading:
        return ((ServerReading.CONTENT_SPECIALS if self.content_specials else ServerReading.PLAIN)
                | (ServerReading.PREFILL if self.prefill else ServerReading.PLAIN))


@dataclass
class RequestView:
    """Everything the pane shows for one request."""

    snapshot: Snapshot
    origin: list[int]  # document message index -> session message index (-1: the summary)
    ledger: list[LedgerEntry]
    plan: Plan
    fences: list[FenceInfo]
    forged: list[ForgedBlock]
    prefix: CachePrefix
    shape: RequestShape
    keep_all_tokens: int
    budget: int | None
    image_tokens: int  # image tokens beyond the placeholders the document counts (an estimate)
    summary_cost: int = 0
    hidden: HiddenTokens = field(default_factory=HiddenTokens)  # per turn: reasoning, tools, images
    summarised: int = 0  # dropped messages the summary in the document stands for (0: none, or it is pending)
    marks: list[tuple[int, str]] = field(default_factory=list)  # (document offset, text): a body's own marks, drawn where they are
    curation: Curation | None = None  # the curated policy's verdict on every message (policy/curated.py)
    trust: list[Standing] = field(default_factory=list)  # each session message's kind, trust and why (trust.py)

    def summary_line(self) -> str:
        """What the summarise policy did, in one line ('' when no summary stands in the document)."""
        if -1 not in self.origin:
            return ""
        if not self.summarised:
            return (f"summarise: {len(self.ledger)} messages left out, the summary is pending a model call (made when "
                    "you send)")
        rest = len(self.ledger) - self.summarised
        more = f"; {rest} more left out, not in the summary yet (summarised at the next send)" if rest > 0 else ""
        return (f"summarise: {self.summarised} messages replaced by one summary{more}; the summary cost "
                f"{self.summary_cost} tokens to make")

    @property
    def document(self) -> Document:
        return self.snapshot.document

    @property
    def sent_tokens(self) -> int:
        return self.snapshot.counts.total + self.image_tokens

    def breakdown(self, window: int | None, reserved: int) -> list[tuple[str, int]]:
        """Tokens by what they are, from the one per-turn accounting (hidden_tokens): each role's own text,
        template overhead, the tools (all they add), fences, images, the reply's room, what is free."""
        parts: dict[str, int] = {}

        def add(key: str, count: int) -> None:
            parts[key] = parts.get(key, 0) + count
        for turn in self.hidden.turns:
            for category, count in turn.counts.items():
                if category == "tool_schema":
                    add(TOOLS_PART, count)
                elif category == "images":
                    add(IMAGES_PART, count)
                elif category == "template" or turn.role == "none":
                    add("template overhead", count)
                else:
                    add(turn.role, count)
        for span in self.document.spans:  # a fence's own text, out of its message's
            if span.kind == "fence" and span.tokens:
                add("fences", span.tokens)
                add(self.document.role_of(span), -span.tokens)
        order = ["system", "developer", "user", "assistant", "tool", "template overhead", TOOLS_PART, "fences",
                 IMAGES_PART]
        rows = [(key, parts.pop(key)) for key in order if parts.get(key)]
        rows += sorted((key, count) for key, count in parts.items() if count)
        rows.append(("reserved output", reserved))
        if window:
            rows.append(("free", max(0, window - self.sent_tokens - reserved)))
        return rows


TOOLS_PART = "tools (schemas and the template's text for them)"


def _costs(snapshot: Snapshot, count: int) -> tuple[list[int], int]:
    costs, overhead = [0] * count, 0
    for span in snapshot.document.spans:
        if span.message is None:
            overhead += span.tokens
        else:
            costs[span.message] += span.tokens
    return costs, overhead


def summary_is_current(settings: PolicySettings, ledger: list[LedgerEntry]) -> bool:
    """A summary stands for exactly the messages dropped now; otherwise it has to be made again."""
    return bool(settings.summary) and sorted(settings.summary_of) == sorted(e.message_id for e in ledger)


def _summary_covers(settings: PolicySettings) -> set[str]:
    return set(settings.summary_of) if settings.name == "summarise" and settings.summary else set()


def _summary_message(settings: PolicySettings, ledger: list[LedgerEntry], untrusted: bool, style: FenceStyle,
                     escapes: frozenset[str]) -> tuple[WireMessage, FencedText | None]:
    """The message standing for the dropped turns. A summary of untrusted turns is untrusted too: fenced."""
    covered = _summary_covers(settings)
    if not covered or not covered <= {e.message_id for e in ledger}:  # a summary of a part still applies
        return {"role": "user", "content": f"[summary of {len(ledger)} earlier messages: pending a model call]"}, None
    if untrusted and style.enabled:
        fenced = fence(settings.summary or "", f"summary of {len(covered)} earlier messages, some untrusted",
                       SUMMARY_ID, style, escapes)
        return {"role": "user", "content": fenced.text}, fenced
    return {"role": "user", "content": f"Summary of {len(covered)} earlier messages: {settings.summary}"}, None


def summarises_untrusted(messages: list[Message], ledger: list[LedgerEntry]) -> bool:
    return any(not messages[e.message].provenance.trusted for e in ledger if 0 <= e.message < len(messages))


def _render(wire: list[WireMessage], settings: RequestSettings, cache: SegmentCache) -> Snapshot:
    def render(messages: list[WireMessage]) -> Snapshot:
        return assemble(messages, settings.template, settings.tokenizer, settings.variables,
                        settings.add_generation_prompt, settings.tools, cache, settings.exact, settings.reading)
    try:
        return render(wire)
    except TemplateRenderError:
        flat = with_media_markers(wire)
        if flat is None:
            raise
        # a text-only template: rendered as llama.cpp's server renders it, each image its media marker in
        # the text; what is sent is still the parts
        return replace(render(flat), wire=wire, media_markers=True)


def _total_without_tools(snapshot: Snapshot, settings: RequestSettings, cache: SegmentCache) -> int:
    if not snapshot.media_markers:  # (else rendered from other messages than it sends: the whole way again)
        try:
            return total_without_tools(snapshot, settings.template, settings.tokenizer, settings.variables,
                                       settings.add_generation_prompt, cache, settings.reading)
        except TemplateRenderError:  # refused without tools: the whole way again, which retries with media markers
            pass
    return _render(snapshot.wire, replace(settings, tools=None), cache).counts.total


def _shape(document: Document, messages: list[Message], wire: list[WireMessage], origin: list[int],
           settings: RequestSettings, dropped: frozenset[str], tokens: TokenIndex,
           fenced_ids: frozenset[str] = frozenset()) -> RequestShape:
    """What later requests compare with: the text, its tokens, and each message as sent."""
    def sent(index: int, key: str, default: Any = None) -> Any:
        return wire[index].get(key, default) if index >= 0 else default

    return RequestShape(document.text, tokens,
                        [messages[i].id if i >= 0 else SUMMARY_ID for i in origin],
                        [content_text(sent(i, "content")) for i in origin],  # as sent
                        [messages[i].role if i >= 0 else "user" for i in origin],
                        settings.tools, dict(settings.variables), dropped, document.tail_start(),
                        [((messages[origin[s.message]].id if origin[s.message] >= 0 else SUMMARY_ID)
                          if s.message is not None else "", s.kind, s.start, s.end, s.tokens)
                         for s in document.spans],
                        [sent(i, "tool_calls") for i in origin], [sent(i, "reasoning_content") or "" for i in origin],
                        _blocks(document, [sent(i, "content") for i in origin]), list(origin),
                        settings.template.name, settings.template.identity.digest or "", settings.fences.enabled,
                        fenced_ids, _block_roles(document, [messages[i].role if i >= 0 else "user" for i in origin]))


def _block_roles(document: Document, roles: list[str]) -> list[str]:
    """The role of each block `_blocks` finds, in the same order."""
    owners = sorted({span.message for span in document.spans if span.message is not None and span.kind != "marker"})
    return [roles[index] for index in owners if index < len(roles)]


def _blocks(document: Document, contents: list[Any]) -> list[tuple[int, str]]:
    """Where each message's text ends, with the cache_control lifetime its content parts mark ("" if none).

    A block here is a message (its parts are rendered as one text): Anthropic counts content parts.
    """
    ends: dict[int, int] = {}
    for span in document.spans:
        if span.message is not None and span.kind != "marker":
            ends[span.message] = span.end
    return [(end, _marked(contents[index])) for index, end in sorted(ends.items()) if index < len(contents)]


def _marked(content: Any) -> str:
    """The lifetime a message's parts mark: Anthropic's cache_control ttl ("5m" by default), or an OpenAI
    prompt_cache_breakpoint; "" when unmarked."""
    if not isinstance(content, list):
        return ""
    parts = [part for part in content if isinstance(part, dict)]
    marks = [part.get("cache_control") for part in parts]
    found = [mark for mark in marks if isinstance(mark, dict)]
    if found:
        return str(found[-1].get("ttl") or "5m")[:8]
    return OPENAI_MARK if any(isinstance(part.get("prompt_cache_breakpoint"), dict) for part in parts) else ""


def _judged(plan: Plan, sent: int, policy: PolicySettings) -> Plan:
    """The plan's verdict on the budget from the rendered count, not the per-message estimate it was made
    from: the pane never says "56 sent" and "need 636" at once."""
    budget = policy.budget
    if budget is None or sent <= budget:
        return replace(plan, over_budget=False, warning="")
    why = f" (window {policy.context_window} - max_tokens {policy.max_tokens})" if budget <= 0 else ""
    return replace(plan, over_budget=True,
                   warning=f"{sent} tokens sent exceed the budget of {budget}{why}: the server may refuse or cut")


def build_request(messages: list[Message], settings: RequestSettings, previous: RequestShape | None = None,
                  request_number: int = 1, previously_dropped: dict[str, int] | None = None,
                  cache: SegmentCache | None = None, server: LlamaCppCache | ProviderCache | None = None,
                  now: float | None = None) -> RequestView:
    """Assemble the request that `messages` would send now, with every policy applied.

    The cache prefix is predicted against `server` (a LlamaCppCache or ProviderCache holding the prompts
    sent so far) when given, else against `previous` only.
    """
    cache = cache if cache is not None else SegmentCache()
    specials = settings.template.special_strings()
    escapes = fence_escapes(settings.template, settings.tokenizer) if settings.fences.enabled else frozenset()
    wire, fenced, fence_infos = fence_messages(messages, settings.fences, escapes)
    full = _render(wire, settings, cache)
    costs, overhead = _costs(full, len(messages))
    family = family_for(settings.model, settings.template.name)
    images = [sum(part_estimate(p, family).tokens for p in image_parts(m.content)) for m in messages]
    costs = [c + i for c, i in zip(costs, images)]
    roles, pinned = [m.role for m in messages], [m.pinned for m in messages]
    calls, ids = [bool(m.tool_calls) for m in messages], [m.id or f"m{i}" for i, m in enumerate(messages)]
    drop_more, origin, snapshot, curation, sent = 0, list(range(len(messages))), full, None, messages
    for _attempt in range(3 if settings.policy.name == "curated" else 0):  # a store packed to the budget
        sent, plan, curation = curated_plan(messages, costs, overhead, settings.policy, settings.tokenizer, ids,
                                            request_number, previously_dropped or {}, drop_more, now)
        wire, fenced, fence_infos = fence_messages(sent, settings.fences, escapes)  # trimmed, then fenced
        origin = list(plan.kept)
        snapshot = _render([wire[i] for i in origin], settings, cache)
        over = (settings.policy.budget or 0) and snapshot.counts.total - settings.policy.budget
        if over <= 0:
            break
        drop_more += over  # packed again, smaller by what the last attempt was over
    for _attempt in range(0 if curation is not None else len(messages) + 1):  # a plan is made from per-message costs; the rendering judges
        plan = plan_truncation(roles, costs, overhead, pinned, calls, settings.policy, request_number,
                               previously_dropped, ids, drop_more)
        planned, covered = {e.message_id for e in plan.ledger}, _summary_covers(settings.policy)
        if plan.ledger and planned < covered:  # the summary stands for more: leave those out too, so it applies
            drop_more += len(covered - planned)
            continue
        origin, snapshot = list(plan.kept), full
        fenced.pop(-1, None)  # the summary's fence, if an earlier attempt made one
        if plan.ledger:
            kept_wire = [wire[i] for i in plan.kept]
            if settings.policy.name == "summarise":
                first = next((n for n, i in enumerate(plan.kept) if messages[i].role not in ("system", "developer")),
                             0)
                summary, summary_fence = _summary_message(settings.policy, plan.ledger,
                                                          summarises_untrusted(messages, plan.ledger),
                                                          settings.fences, escapes)
                kept_wire.insert(first, summary)
                origin.insert(first, -1)
                if summary_fence is not None:
                    fenced[-1] = summary_fence
            snapshot = _render(kept_wire, settings, cache)
        over = (settings.policy.budget or 0) and snapshot.counts.total - settings.policy.budget
        if not plan.ledger or plan.over_budget or over <= 0:
            break
        drop_more += 1  # the summary or a shift in the template cost more than planned: drop one more unit
    document = split_fence_spans(snapshot.document, fenced, origin) if fenced else snapshot.document
    if document is not snapshot.document:
        document, counts = count_tokens(document, settings.tokenizer, specials, cache,
                                        content_specials=settings.content_specials)
        counts.exact = snapshot.counts.exact and is_exact(settings.template, settings.tokenizer, settings.exact)
        snapshot = replace(snapshot, document=document, counts=counts)
    fenced_ids = frozenset(messages[i].id for i in fenced if 0 <= i < len(messages))
    return _finished(snapshot, sent, wire, origin, settings, plan, fence_infos, fenced_ids,
                     full.counts.total + sum(images), cache, server, previous, now, curation)


def refreshed_after_splice(view: RequestView, messages: list[Message], settings: RequestSettings,
                           previous: RequestShape | None = None, cache: SegmentCache | None = None,
                           server: LlamaCppCache | ProviderCache | None = None,
                           now: float | None = None) -> RequestView | None:
    """`view` after its draft was spliced in place (tokens/draft_splice.py), with what the splice leaves stale
    (the cache shape and prefix, the per-turn accounting, forged blocks, the budget's verdict) computed from its
    document, without rendering again: what build_request(messages, …) gives, at a fraction of the cost. None when
    the draft could move the plan (something was dropped, or keeping all no longer fits) or the tools' cost (a
    render without them): build_request is owed."""
    budget = settings.policy.budget
    if view.ledger or settings.tools or view.curation is not None or -1 in view.origin \
            or len(view.origin) != len(messages) or (budget is not None and view.keep_all_tokens > budget):
        return None
    return _finished(view.snapshot, messages, view.snapshot.wire, view.origin, settings, view.plan, view.fences,
                     view.shape.fenced_ids, view.keep_all_tokens, cache or SegmentCache(), server, previous, now)


def _finished(snapshot: Snapshot, messages: list[Message], wire: list[WireMessage], origin: list[int],
              settings: RequestSettings, plan: Plan, fence_infos: list[FenceInfo], fenced_ids: frozenset[str],
              keep_all: int, cache: SegmentCache, server: LlamaCppCache | ProviderCache | None,
              previous: RequestShape | None, now: float | None, curation: Curation | None = None) -> RequestView:
    """The view of a rendered, counted request: everything read off its document."""
    document, specials = snapshot.document, settings.template.special_strings()
    family = family_for(settings.model, settings.template.name)
    shape = _shape(document, messages, wire, origin, settings, frozenset(e.message_id for e in plan.ledger),
                   token_index(document, settings.tokenizer, specials, cache), fenced_ids)
    tools = template_tools(settings.template, settings.tools)  # found in the document as the template wrote them
    hidden = hidden_tokens(document, origin, messages, settings.tokenizer, family, tools, shape.tokens, cache,
                           tool_texts(settings.template, tools))
    if settings.tools:  # what the tools cost is the difference they make: the same request rendered without them
        settle_tools(hidden, snapshot.counts.total - _total_without_tools(snapshot, settings, cache))
    if snapshot.media_markers:
        hidden.notes.insert(0, "the template takes no content parts: rendered as llama.cpp's server does, each image "
                               f"written as its media marker {MEDIA_MARKER} in the text")
    hidden.notes += reasoning_notes(settings.model, settings.base_url, [messages[i] for i in plan.kept])
    plan = _judged(plan, snapshot.counts.total + hidden.image_extra, settings.policy)
    if server is not None:
        prefix = predict_prefix(server, shape, document, settings.cache_rule, now)
    else:
        prefix = cache_prefix(previous, shape, document, settings.cache_rule)
    covered = _summary_covers(settings.policy)
    summarised = len(covered) if -1 in origin and covered and covered <= {e.message_id for e in plan.ledger} else 0
    return RequestView(snapshot, origin, plan.ledger, plan, fence_infos, forged_blocks(document), prefix, shape,
                       keep_all, settings.policy.budget, hidden.image_extra, settings.policy.summary_cost, hidden,
                       summarised, curation=curation, trust=[standing(message, now) for message in messages])


def empty_view(settings: RequestSettings) -> RequestView:
    """The view of a conversation with no messages yet: nothing to render, nothing sent."""
    from tui.context.assemble import Snapshot
    from tui.context.policy.truncation import Plan
    from tui.context.cache.prefix import CachePrefix
    from tui.context.tokens.counting import TokenCounts

    document = Document("", [], [])
    counts = TokenCounts(0, {}, {}, False, settings.tokenizer.name)
    shape = RequestShape("", TokenIndex(""), [], [], [], settings.tools, dict(settings.variables))
    prefix = CachePrefix(0, 0, 0, None, None, "no messages yet", 0, settings.cache_rule)
    return RequestView(Snapshot(document, counts, settings.template.name, settings.tokenizer.name, []), [], [],
                       Plan([]), [], [], prefix, shape, 0, settings.policy.budget, 0)
