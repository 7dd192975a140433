"""The server's cache, rebuilt from a session's request records: the prediction for each request sent,
checked against what the server reported, and the model as it stands for the next request.

Each record's body is rendered again (replay.Replayer: the document is proved by its hash); the reply,
`usage` and `timings` the record keeps give what the server computed (its prompt count, the tokens it
generated, their text when the reply kept `generated`). Files written before these fields exist replay
too: without `generated`, the reply's text stands for the generated tokens.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from tui.context.cache.prefix import CachePrefix
from tui.context.cache.predict import CacheReport, cache_report, held_prompt, predict_prefix
from tui.context.cache.llamacpp import LlamaCppCache, LlamaCppConfig
from tui.context.cache.providers import ProviderCache

from tui.sessions.model import Session
from tui.sessions.replay import Replayer


@dataclass
class CacheStep:
    number: int
    prefix: CachePrefix  # what the model predicts for this request, from the requests before it
    report: CacheReport  # against the figure the record keeps


def server_model(rule: str, model_id: str = "", config: LlamaCppConfig | None = None) -> LlamaCppCache | ProviderCache:
    """An empty model of the server's cache for `rule` (cache_rules.RULES)."""
    return LlamaCppCache(config or LlamaCppConfig()) if rule == "llama.cpp" else ProviderCache(rule, model_id)


def replay_cache(session: Session, replayer: Replayer, rule: str = "llama.cpp",
                 config: LlamaCppConfig | None = None) -> tuple[list[CacheStep], LlamaCppCache | ProviderCache]:
    """Every request of `session` predicted from those before it; and the model after the last one.

    The model assumes the server started empty with the session's first request and served no one else;
    a report that disagrees says where that stopped being true.
    """
    model, steps = server_model(rule, session.model, config), []
    for index, record in enumerate(session.requests):
        view = replayer.stored_view(index)
        sent_at = seconds(record.time)
        prefix = predict_prefix(model, view.shape, view.document, rule, sent_at)
        prompt = (record.usage or {}).get("prompt_tokens")
        steps.append(CacheStep(record.number, prefix,
                               cache_report(prefix, record.cached_reported, view.shape, view.document, prompt,
                                            (record.reply or {}).get("diagnostics"))))
        model.record(held_prompt(record.number, view.shape, record.reply, record.usage, record.timings, sent_at))
    return steps, model


def seconds(iso_time: str) -> float | None:
    """An ISO-8601 time as seconds since the epoch; None when it cannot be read (a file from elsewhere)."""
    try:
        return datetime.fromisoformat(iso_time).timestamp()
    except (TypeError, ValueError):
        return None
