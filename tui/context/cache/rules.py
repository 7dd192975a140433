"""What each provider reuses from its prompt cache: one table of rules, as data, and their arithmetic.

Every figure carries where it was confirmed (`sources`) or says it was not (`unconfirmed`). Providers
change these rules; the table is the one place to update them. The arithmetic works on token
positions the caller has measured (shared prefixes, breakpoint ends), so it needs no tokenizer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Sequence

# How a rule decides what is reused.
SERVER = "server-model"  # a self-hosted server whose cache is simulated (llama.cpp: see llamacpp_cache.py)
PREFIX = "prefix"  # automatic: the longest common prefix with an earlier prompt, in steps above a minimum
BREAKPOINTS = "breakpoints"  # explicit: only prefixes ending at a marked block are written and read
UNITS = "units"  # automatic: only whole stored prefix units are read (DeepSeek)
NOTHING = "none"
UNKNOWN = "unknown"  # the rule of a server nobody knows: no prediction is made
OPENAI_MARK = "breakpoint"  # the lifetime label of an OpenAI breakpoint (a prompt_cache_breakpoint, or the managed one)


@dataclass(frozen=True)
class Lifetime:
    label: str
    seconds: int  # how long an entry lives after its last use
    write_multiplier: float | None = None  # price of writing, as a multiple of the input price


@dataclass(frozen=True)
class CacheRule:
    key: str
    display: str
    kind: str
    minimum: int = 0  # prefixes shorter than this (tokens) are never cached, for models not listed
    minimums: tuple[tuple[str, int], ...] = ()  # model-id prefix -> its own minimum
    step: int = 1  # cached counts above the minimum come in multiples of this
    last_token_evaluated: bool = False  # the final prompt token is always computed again
    max_breakpoints: int | None = None
    lookback_blocks: int | None = None  # how many blocks before a breakpoint are checked for an entry
    lifetimes: tuple[Lifetime, ...] = ()
    read_multiplier: float | None = None  # price of a cached token, as a multiple of the input price
    best_effort: bool = False  # the provider may miss even when the rule says hit: predictions are "up to"
    managed_roles: tuple[str, ...] = ()  # the provider's own breakpoint: after the last message of these roles
    disputed: tuple[tuple[str, str], ...] = ()  # model-id prefix -> where published figures disagree
    sources: tuple[str, ...] = ()
    unconfirmed: tuple[str, ...] = field(default=())


RULES: dict[str, CacheRule] = {rule.key: rule for rule in (
    CacheRule(
        "llama.cpp", "llama.cpp (slots and host-memory prompt cache)", SERVER, last_token_evaluated=True,
        sources=("measured on llama.cpp b11669 (tests/test_cache_server.py): cache_n is the common prefix with "
                 "the prompt the chosen slot holds, the last prompt token is evaluated again; slot choice, "
                 "--slot-prompt-similarity 0.10, --cache-ram 8192 MiB and --cache-idle-slots from its --help "
                 "and -lv 4 log",)),
    CacheRule(
        "openai", "OpenAI (automatic prefix caching)", PREFIX, minimum=1024, step=128, best_effort=True,
        lifetimes=(Lifetime("in memory", 3600),),
        sources=("OpenAI cookbook 'Prompt Caching 201': automatic for prompts of 1024 tokens or more, cache "
                 "hits in increments of 128 tokens, exact repeated prefix",),
        unconfirmed=("lifetime: commonly 5-10 minutes of inactivity, up to one hour; the upper bound is used",
                     "cached-input price: varies by model, not in this table")),
    CacheRule(
        "openai-5.6", "OpenAI GPT-5.6 and later (a managed breakpoint and prompt_cache_breakpoint marks)",
        BREAKPOINTS, minimum=1024, max_breakpoints=4, lifetimes=(Lifetime(OPENAI_MARK, 3600, 1.25),),
        managed_roles=("user", "tool"), best_effort=True,
        sources=("developers.openai.com prompt-caching guide: for GPT-5.6 and later, cache writes cost 1.25x the "
                 "uncached input rate and are reported in cache_write_tokens; explicit prompt_cache_breakpoint "
                 "marks choose which prefixes are cached",
                 "OpenAI's GPT-5.6 migration notes (quoted in openai/codex#35300): implicit caching places a "
                 "managed breakpoint near the latest user or tool message and no longer rounds to 128 tokens",
                 "langchain4j's OpenAiOfficialPromptCacheBreakpoint docs: an entry matches exactly at a "
                 "breakpoint; up to four cache writes a request, one taken by the managed breakpoint"),
        unconfirmed=("the 1024-token minimum of the older rule is assumed to hold",
                     "lifetime: the older rule's upper bound of one hour is used",
                     "an entry is read at any block boundary of the new prompt (a growing conversation hits)",
                     "prompt_cache_options mode 'explicit' (no managed breakpoint) is not modelled")),
    CacheRule(
        "anthropic", "Anthropic (cache_control breakpoints)", BREAKPOINTS, minimum=1024,
        minimums=(("claude-opus-5", 512), ("claude-fable-5", 512), ("claude-mythos-5", 512),
                  ("claude-mythos-preview", 4096), ("claude-opus-4-8", 1024), ("claude-opus-4-7", 4096),
                  ("claude-opus-4-6", 4096), ("claude-opus-4-5", 4096), ("claude-haiku-4-5", 4096),
                  ("claude-sonnet-5", 1024), ("claude-sonnet-4-6", 1024), ("claude-3-5-haiku", 2048),
                  ("claude-3-haiku", 2048)),
        disputed=(("claude-opus-5", "512 was measured against the API by a third party (harn-vm, 2026-07-24); "
                                    "no published table in the stored copies lists it"),
                  ("claude-fable-5", "512 was measured against the API by a third party (harn-vm, 2026-07-24); "
                                     "no published table in the stored copies lists it"),
                  ("claude-mythos-5", "512 was measured by a third party (harn-vm); not in a published table"),
                  ("claude-mythos-preview", "a docs cheatsheet says 4,096; a third party measured 2,048"),
                  ("claude-opus-4-7", "a docs cheatsheet says 4,096; a third party measured 2,048"),
                  ("claude-sonnet-4-6", "a docs cheatsheet and a measurement say 1,024; gateway docs (orq.ai) say "
                                        "2,048")),
        max_breakpoints=4, lookback_blocks=20,
        lifetimes=(Lifetime("5m", 300, 1.25), Lifetime("1h", 3600, 2.0)), read_multiplier=0.1,
        sources=("platform.claude.com pricing: 5m cache writes 1.25x, 1h cache writes 2x, cache hits 0.1x the "
                 "base input price (e.g. Opus 4.5: $5, $6.25, $10, $0.50 per MTok)",
                 "prompt caching docs (and gateway docs quoting them): up to 4 breakpoints, 5-minute default "
                 "lifetime refreshed on use, '1h' option, tools -> system -> messages order, 20-block lookback"),
        unconfirmed=("per-model minimums come from a docs cheatsheet (clawdemy.org), gateway documentation (orq.ai, "
                     "aihubmix) and a third party's measurements (harn-vm); the official table was not in the "
                     "stored copy; where they disagree, `disputed` says so; 1024 is assumed for models not listed",
                     "cache_miss_reason (cache diagnostics): read from a reply that carries it and shown beside "
                     "the predicted cause")),
    CacheRule(
        "gemini", "Gemini (implicit caching)", PREFIX, minimum=4096,
        minimums=(("gemini-2.5-flash", 2048), ("gemini-2.5-pro", 2048)), best_effort=True,
        sources=("ai.google.dev/gemini-api/docs/caching (updated 2026-10-13): implicit caching on by default "
                 "for Gemini 2.5 and newer, minimum 2,048 tokens for 2.5 Flash and 2.5 Pro, 4,096 for the 3.x "
                 "models listed, no guarantee of a hit",),
        unconfirmed=("earlier versions of that page gave 1,024 (2.5 Flash) and 4,096 (2.5 Pro); a forum report "
                     "says the API enforces 1,024 for 2.5 Flash explicit caches",
                     "granularity of a hit and the discount on cached tokens: not confirmed",
                     "lifetime of an implicit entry: not published")),
    CacheRule(
        "deepseek", "DeepSeek (context caching on disk)", UNITS, best_effort=True,
        sources=("api-docs.deepseek.com/guides/kv_cache: on by default; prefix units stored at the end of each "
                 "request's input and of its output, and at a common prefix detected between requests; a request "
                 "hits only a unit it contains whole",),
        unconfirmed=("units cut at fixed token intervals in long inputs: the interval is not published, not "
                     "modelled", "older docs: 64-token storage units, nothing under 64 tokens cached; no longer "
                     "stated, not applied", "lifetime: 'hours to days', best effort; cached-input price varies "
                     "by model and date")),
    CacheRule("none", "no prompt cache", NOTHING),
    CacheRule(UNKNOWN, "not known (a gateway, or a server whose cache ctxpane does not model): nothing is "
                       "predicted; the cached figures are the server's own", NOTHING),
)}


def rule_for(key: str) -> CacheRule:
    return RULES.get(key, RULES["none"])


def disputed_for(rule: CacheRule, model: object = None) -> str:
    """Where published figures for this model's rule disagree ('' when they do not, or it is not listed)."""
    if not isinstance(model, str) or not model:
        return ""
    name = model.replace("\\", "/").rsplit("/", 1)[-1].casefold()
    found = [(prefix, note) for prefix, note in rule.disputed if name.startswith(prefix)]
    return max(found, key=lambda item: len(item[0]))[1] if found else ""


def rule_known(key: str) -> bool:
    """Is there a rule to predict with (not `unknown`)? A prediction made without one is no prediction."""
    return key != UNKNOWN


def minimum_for(rule: CacheRule, model: object = None) -> int:
    """The rule's minimum for a model id (its last path segment, case-folded, longest prefix first)."""
    if not isinstance(model, str) or not model:
        return rule.minimum
    name = model.replace("\\", "/").rsplit("/", 1)[-1].casefold()
    for prefix, minimum in sorted(rule.minimums, key=lambda item: -len(item[0])):
        if name.startswith(prefix):
            return minimum
    return rule.minimum


def prefix_cached(rule: CacheRule, shared: int, total: int, model: object = None) -> int:
    """Tokens a prefix rule reuses when `shared` tokens of a `total`-token prompt were seen before."""
    if rule.kind in (NOTHING, UNITS, BREAKPOINTS):
        return 0
    shared = max(0, min(shared, total))
    if rule.last_token_evaluated:
        shared = min(shared, total - 1)
    minimum = minimum_for(rule, model)
    if shared < minimum or shared <= 0:
        return 0
    return minimum + (shared - minimum) // rule.step * rule.step


# -- Anthropic: explicit breakpoints --------------------------------------------------------------------
@dataclass(frozen=True)
class BreakpointUsage:
    read: int  # cache_read_input_tokens
    write: int  # cache_creation_input_tokens
    uncached: int  # input_tokens
    problem: str = ""  # why the request would be refused or not cached as marked


def breakpoint_usage(block_ends: Sequence[int], breakpoints: Sequence[int], live_entries: Iterable[int],
                     total: int, minimum: int, rule: CacheRule = RULES["anthropic"]) -> BreakpointUsage:
    """Tokens read from, written to and left out of the cache for one request.

    `block_ends`: token position where each content block ends, in order; `breakpoints`: indices of the
    blocks marked with cache_control; `live_entries`: prefix lengths an earlier request wrote that are
    still alive and that this request contains. A breakpoint reads the longest entry found at it or at
    the blocks before it (within the lookback); the last breakpoint writes what it did not read.
    """
    if rule.max_breakpoints is not None and len(breakpoints) > rule.max_breakpoints:
        managed = " (the provider's own one included)" if rule.managed_roles else ""
        return BreakpointUsage(0, 0, total, f"{len(breakpoints)} cache breakpoints{managed}: at most "
                                            f"{rule.max_breakpoints} are allowed (the request is refused)")
    entries = set(live_entries)
    read = max((_found_at(block_ends, index, entries, rule.lookback_blocks) for index in breakpoints), default=0)
    read = read if read >= minimum else 0
    marked = block_ends[max(breakpoints)] if breakpoints else 0
    write = marked - read if marked >= minimum and marked > read else 0
    problem = "" if not breakpoints or marked >= minimum else \
        f"the marked prefix has {marked} tokens, under this model's minimum of {minimum}: nothing is cached"
    return BreakpointUsage(read, write, total - read - write, problem)


def _found_at(block_ends: Sequence[int], index: int, entries: set[int], lookback: int | None) -> int:
    first = 0 if lookback is None else max(0, index - lookback + 1)
    return max((block_ends[j] for j in range(first, index + 1) if block_ends[j] in entries), default=0)


def breakpoint_cost(usage: BreakpointUsage, input_price: float, lifetime: str = "5m",
                    rule: CacheRule = RULES["anthropic"]) -> float:
    """The price of the prompt: writes and reads at the rule's multiples of the input price (per token)."""
    write = next((life.write_multiplier for life in rule.lifetimes if life.label == lifetime), None)
    if write is None or rule.read_multiplier is None:
        raise ValueError(f"{rule.key} has no write price for a {lifetime!r} lifetime")
    return input_price * (usage.uncached + usage.write * write + usage.read * rule.read_multiplier)


# -- DeepSeek: stored prefix units -------------------------------------------------------------------------
def unit_cached(units: Iterable[tuple[int, int]]) -> int:
    """The longest stored unit this request contains whole. Each unit is (its length, the prefix this
    request shares with the request that stored it): DeepSeek reads nothing of a unit only partly contained."""
    return max((length for length, shared in units if 0 < length <= shared), default=0)


def shown_figure(value: int | None) -> str:
    """A predicted figure as shown: '—' where nothing was predicted (the rule is not known)."""
    return "—" if value is None else str(value)
