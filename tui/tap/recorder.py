"""Turning tapped exchanges into session records, off the path of the client's bytes.

The server tells the recorder of each exchange; the recorder queues the work on its own thread (one,
so conversations are built in the order requests arrived): `begin` when a request has gone upstream
(its document, tokens, the client's own cuts and the cache predicted, before the answer), `finish`
once the answer is over (the reply as it streamed, usage, timings, sent against received, cost), then
the conversation's session file is saved. A failure is logged and counted; the traffic never waits.

Each request is rendered from its exact body by the same Replayer `ctxpane replay --check` uses, so
what is recorded is what replay finds again, byte for byte.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from tui.context.errors import TemplateRenderError
from tui.context.formats import FormatKind, Parsed, kind_of_path
from tui.context.policy.truncation import PolicySettings
from tui.context.cache.causes import CauseClass
from tui.context.messages import Message, Provenance
from tui.context.cache.rules import rule_known
from tui.context.families.identity import SHIPPED
from tui.context.untrusted.redaction import Redactor
from tui.sessions.model import RequestRecord, Session

from tui.tap.bodies import body_keys, check_body, check_bytes, max_tokens_of, wire_body
from tui.tap.client_cuts import client_cuts, compaction_record, messages_of, with_cache_effect
from tui.tap.conversations import Conversation, Conversations
from tui.tap.chains import Chains
from tui.tap.identity import hints_of, identity_of
from tui.tap.origin import identity_record, masked_again, origin_notes, title_of
from tui.tap.sent import sent_record
from tui.tap.keeping import Keeping
from tui.tap.memory import TRIM_AFTER, give_back
from tui.tap.replies import TEXT_BUDGET, TEXT_END_KEPT, TEXT_END_KEPT_LATE, kept_ends, stream_record, wire_reply
from tui.tap.server import STOPPED, Exchange
from tui.tap.state import Engine, Tapped, TapReplayer, Thread  # noqa: F401 - Engine and Tapped re-exported

log = logging.getLogger("ctxpane.tap")

KEEP_BYTES_OF = 100  # finished exchanges whose raw reply bytes stay in memory (for the view and tests)
KEEP_BYTES_TOTAL = 16 * 1024 * 1024  # and at most these bytes of them (replies of 32 MB each would be 3.2 GB)


def stamp() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")


class Recorder(Keeping):
    def __init__(self, upstream: str, folder: Path, engine_source: Callable[[str], Engine],
                 on_change: Callable[[str, Tapped], None] | None = None):
        self.upstream, self.folder = upstream, folder
        self.engine_source = engine_source  # called on the recording thread, once, with the first request's model
        self.engine: Engine | None = None
        self._assumed: dict[str, Engine] = {}  # by model family, when the engine is assumed from model names
        self.on_change = on_change or (lambda kind, tapped: None)
        self.conversations = Conversations()  # chat completions; each other format has its own (by_format)
        self.by_format: dict[FormatKind, Conversations] = {}
        self.chains = Chains()  # Responses ids seen, and the requests they answered
        self.threads: dict[int, Thread] = {}
        self.tapped: dict[int, Tapped] = {}  # by exchange number
        self.failures = 0
        self.passed = 0  # requests forwarded that are not chat completions (not rendered)
        self.prefix = f"tap-{stamp()}"
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ctxpane-tap-record")
        self._lock = threading.Lock()
        self.prices = None
        self.server_cache = None  # the model of llama.cpp's slots and prompt cache (tui/context/cache/llamacpp.py)
        self.finished: list[Exchange] = []  # the latest exchanges over, whose bytes are still held
        self.with_views: list[Tapped] = []  # the latest requests that keep their rendering in memory
        self.written: set[Path] = set()
        self.cut_by_stop = 0
        self.queued = 0  # requests' starts and ends told and not yet recorded
        self.hurried = False  # the stop was hurried: the queue is left out
        self.left_out = 0  # requests the hurried stop left out
        self.append_seconds: list[float] = []  # how long each of the latest appends to a session file took
        self.append_cpu: list[float] = []  # and the processor time of each (the rest is the disk: fsync)
        self.view_chars = 0  # the characters of the documents the views kept hold

    # -- told by the server (on the event loop: nothing here may wait) --------------------------------
    def listen(self, kind: str, exchange: Exchange) -> None:
        if kind in ("request", "end"):
            self.queued += 1
            self._pool.submit(self._guarded, self.begin if kind == "request" else self.finish, exchange)

    def hurry(self) -> None:
        """Stop now (a second Ctrl+C): what is still queued is left out, what was recorded is saved, and said."""
        self.hurried = True

    def close(self, wait: bool = True) -> None:
        """Save what is still due, let go of the files' locks, and stop the recording thread."""
        try:
            self._pool.submit(self._guarded_flush)
            self._pool.submit(self.let_go_of_files)
        except RuntimeError:  # closed already
            pass
        self._pool.shutdown(wait=wait)

    def drain(self) -> None:
        """Wait until every exchange told so far is recorded and saved (for tests and a clean exit)."""
        self._pool.submit(self._guarded_flush).result()

    def _guarded(self, step: Callable[[Exchange], None], exchange: Exchange) -> None:
        self.queued -= 1
        if self.hurried:
            self.left_out += step == self.begin  # (a request left out is counted once, at its start)
            return
        try:
            step(exchange)
            if step == self.finish and exchange.forwarded_bytes >= TRIM_AFTER:
                give_back()  # the reply's copies are freed now (its record keeps its ends): the memory goes back
        except Exception as exc:  # noqa: BLE001 - a recording failure is logged and shown, never raised
            self.failures += 1
            said = f"{type(exc).__name__}: {str(exc)[:300]}"
            if isinstance(exc, TemplateRenderError):  # the client's conversation, not the tap: one line says why
                said = f"the template cannot render this conversation ({said})"
            if isinstance(exc, (ValueError, TemplateRenderError)):  # a body a session cannot hold: one line says why
                log.warning("request %d not recorded: %s", exchange.number, said)
            else:
                log.exception("recording request %d failed", exchange.number)
            tapped = self.tapped.setdefault(exchange.number, Tapped(exchange))
            tapped.problem = f"not recorded: {said}"
            if step == self.finish:  # its end is the problem: there is no other "end" to come
                tapped.done = True
            self.on_change("problem", tapped)

    # -- on the recording thread ---------------------------------------------------------------------
    def ready_engine(self, model: str = "") -> Engine:
        """The upstream's engine, learned once from the first request; when the upstream shows no template of its
        own (an assumption made from the model's name), one per model family: a gpt-4 request is counted with
        cl100k, not with the o200k of a gpt-4o request before it."""
        if self.engine is None:
            self.engine = self.engine_source(model)
            self._assumed[_family_key(model)] = self.engine
            if self.engine.cache_config is not None:
                from tui.context.cache.llamacpp import LlamaCppCache
                self.server_cache = LlamaCppCache(self.engine.cache_config)
        if not model or getattr(self.engine.template, "kind", "") != SHIPPED:
            return self.engine  # the upstream's own template and tokenizer count for every model
        key = _family_key(model)
        if key not in self._assumed:
            self._assumed[key] = self.engine_source(model)
        return self._assumed[key]

    def server_prefix(self, thread: Thread, tapped: Tapped, record: RequestRecord, view: Any) -> Any:
        """The cache predicted against every prompt the server may still hold (its slots and prompt cache, from
        every conversation through the tap), as the app predicts its own requests; the record says where from."""

        from tui.context.cache.predict import predict_prefix

        prefix = predict_prefix(self.server_cache, view.shape, view.document, self.engine.cache_rule, time.time())
        source = self.tapped.get(prefix.source) if prefix.source is not None else None
        record.cache_source = None
        if source is not None and source.record is not None:
            if source.conversation == tapped.conversation:
                record.cache_source = source.record.number
            prefix.place = (f"{prefix.place} (#{prefix.source}: conversation {source.conversation}, request "
                            f"{source.record.number})")[:250]
        reply = source.record.reply if source is not None and source.record is not None else {}
        if prefix.cause_class == CauseClass.REASONING and not (reply.get("reasoning") or reply.get("tool_calls")):
            prefix.cause_class = CauseClass.REPLY  # no reasoning to blame: the generated tokens are what is not known
            prefix.cause = (f"the reply of #{prefix.source} is not counted as reused: the tap asks for no logprobs, "
                            "so which tokens the server generated is not known; the reuse predicted stops where "
                            "that reply begins")
        view = replace(view, prefix=prefix)
        thread.replayer._views[tapped.index] = view  # noqa: SLF001 - the same rendering, the server's prediction
        return view

    def begin(self, exchange: Exchange) -> None:
        found = wire_body(exchange)
        kind, body = found if found is not None else (FormatKind.CHAT, None)
        if body is not None:  # a key some clients put in the body: forwarded, redacted from the file
            exchange.secrets += body_keys(body)
        tapped = Tapped(exchange)
        self.tapped[exchange.number] = tapped
        if exchange.unreadable and kind_of_path(exchange.path) is not None:
            self.passed += 1
            tapped.problem = f"not recorded: {exchange.unreadable}"
            self.on_change("passed", tapped)
            return
        if body is None:
            self.passed += 1
            tapped.problem = "passed through (not a chat completion, Messages or Responses request: not rendered)"
            self.on_change("passed", tapped)
            return
        check_bytes(exchange.body)  # the body is kept as sent: bytes its file could not read back are not recorded
        parsed = check_body(body, kind)  # a body a session file could not hold is not recorded (it was forwarded)
        model = str(body.get("model") or "")[:200]
        engine = self.ready_engine(model)  # an upstream that says nothing: the model's family counts
        held = self.chains.held(parsed, self.threads)  # a Responses request whose server holds its earlier context
        messages = held.messages(parsed)
        if kind is FormatKind.RESPONSES:
            tapped.carried = self.chains.carried(held, parsed)
        tapped.model, tapped.format = model, kind
        conversations = self.conversations if kind is FormatKind.CHAT else self.by_format.setdefault(
            kind, Conversations(self.conversations))
        identity, hints = identity_of(exchange.headers, body), hints_of(exchange.headers)
        match = conversations.place(messages, model, exchange.client, identity, hints.parent)
        if held.thread is not None and (match.conversation is None or match.conversation.number != held.thread):
            match = conversations.continuing(held.thread, messages)  # the chain says where it belongs
        previous_ids = list(match.conversation.ids) if match.conversation else []
        conversation = conversations.commit(match, messages, model, exchange.client, identity)
        self.close_threads()
        thread = self.threads.get(conversation.number) or self.open_thread(conversation, engine, model, exchange)
        tapped.conversation, tapped.index = conversation.number, len(thread.session.requests)
        record = RequestRecord(number=len(thread.session.requests) + 1, time=_iso(exchange.started), body=body,
                               reply={"content": "", "incomplete": True}, template=engine.template.name,
                               tokenizer=engine.tokenizer.name, message_count=len(messages),
                               message_ids=list(match.message_ids), format=kind.value,
                               context=held.record(),
                               sent=sent_record(exchange.method, exchange.path, masked_again(exchange)),
                               identity=identity_record(identity, hints, match, self.threads))
        try:  # the file keeps the body as the client sent it, byte for byte
            record.set_exact_text(exchange.body.decode("utf-8"))
        except UnicodeDecodeError:
            pass
        previous_view = thread.replayer.stored_view(tapped.index - 1) if tapped.index else None
        record.dropped = client_cuts(match, previous_view, previous_ids, record.number, thread)
        previous_record = thread.session.requests[-1] if thread.session.requests else None
        thread.session.requests.append(record)
        try:
            view = thread.replayer.stored_view(tapped.index)
        except BaseException:
            thread.session.requests.pop()  # the file keeps only requests it can replay
            raise
        record.document_hash = hashlib.sha256(view.document.text.encode()).hexdigest()
        record.document_tokens, record.tokens_exact = view.sent_tokens, view.snapshot.counts.exact
        record.keep_all_tokens = view.keep_all_tokens
        record.cache_source = record.number - 1 if tapped.index else None
        record.cache_place = "previous request" if tapped.index else ""
        if self.server_cache is not None:
            view = self.server_prefix(thread, tapped, record, view)
            record.cache_place = view.prefix.place
        prefix = view.prefix
        record.predicted_cached = prefix.predicted_cached if rule_known(prefix.rule) else None
        record.cache_cause = prefix.cause[:4000]
        record.cache_class = prefix.cause_class
        if record.dropped:  # what the client's cut did to the cache, said in each of its ledger entries
            view = with_cache_effect(thread, tapped.index, record, view)
        if match.compacted:
            record.compaction = compaction_record(match, messages, previous_ids, previous_view, previous_record,
                                                  record)
        view = self.format_findings(thread, tapped.index, record, parsed, view)
        tapped.record, tapped.view, tapped.previous = record, view, previous_view
        tapped.client_cut = list(record.dropped)
        thread.tapped.append(tapped)
        thread.secrets.update(exchange.secrets)  # however many keys other requests bring, this file's stay known
        self.let_go(thread, tapped)
        thread.session.messages = messages_of(messages, match.message_ids)
        thread.session.next_id = conversation.next_id
        self.save(thread)  # in the file while its reply streams (a kill then keeps the request, marked incomplete)
        self.on_change("request", tapped)

    def finish(self, exchange: Exchange) -> None:
        self.finished.append(exchange)
        while len(self.finished) > KEEP_BYTES_OF or len(self.finished) > 1 and sum(
                e.kept_bytes + len(e.body) for e in self.finished) > KEEP_BYTES_TOTAL:  # (they live on in the records)
            old = self.finished.pop(0)
            old.chunks, old.offsets, old.body, old.wire = [], [], b"", None
        tapped = self.tapped.get(exchange.number)
        if tapped is None or tapped.record is None:
            if tapped is not None:
                tapped.done = True
                self.on_change("end", tapped)
            return
        thread = self.threads[tapped.conversation]
        record, engine = tapped.record, thread.engine or self.ready_engine()
        reply, translator = wire_reply(exchange, FormatKind(record.format))
        record.reply = reply.to_record()
        if translator is not None:  # the provider's own usage as it sent it (cache writes, …), and a response's id
            self.chains.answered(translator, thread, record)
        record.reply["incomplete"] = bool(reply.incomplete)
        self.cut_by_stop += exchange.error.startswith(STOPPED)
        record.reply["stream"] = stream_record(exchange)
        server_text = Redactor(thread.secrets | set(exchange.secrets))  # an upstream may echo a key in its error
        for part, key in ((record.reply, "error"), (record.reply["stream"], "error"), (record.reply["stream"], "raw")):
            if isinstance(part.get(key), str):
                part[key] = server_text.text(part[key])
        record.usage, record.timings = record.reply.get("usage"), record.reply.get("timings")  # as a file keeps them
        record.cached_reported = reply.cached_tokens
        if tapped.view is not None:  # (a reply that outlasted KEEP_VIEWS newer requests keeps its figures only)
            self.settle(record, thread.session, tapped.view, reply, engine, exchange)
            if record.format == FormatKind.MESSAGES.value:  # the API's own cache figures beside the prediction
                from tui.context.cache.anthropic_marks import reported_notes
                said = reported_notes(record.reply.get("provider_usage"), record.predicted_cached, reply.diagnostics)
                if said:
                    view = tapped.view
                    tapped.view = replace(view, hidden=replace(view.hidden, notes=[*view.hidden.notes, *said]))
                    if thread.replayer._views.get(tapped.index) is view:  # noqa: SLF001
                        thread.replayer._views[tapped.index] = tapped.view  # noqa: SLF001
        if self.server_cache is not None and exchange.status == 200 and not (exchange.client_gone and reply.incomplete) \
                and tapped.view is not None:
    
            from tui.context.cache.predict import held_prompt

            # The tap never asks for logprobs (it changes nothing), so which tokens the server generated is not
            # known: the reply's reuse is not assumed, the prediction covers the prompts held.
            held = held_prompt(exchange.number, tapped.view.shape, record.reply, reply.usage, reply.timings,
                               exchange.started)
            self.server_cache.record(replace(held, reply_known=reply.generated is not None))
        # the next request carries the whole reply: it is matched with all of it, and kept in part (bounded_reply)
        reply_id = thread.conversation.answered(dict(record.reply) if exchange.status == 200 else None)
        bounded_reply(thread, record)
        self.chains.remember(record, tapped.conversation, tapped.carried)
        if reply_id is not None and tapped.index == len(thread.session.requests) - 1:
            thread.session.messages.append(Message("assistant", record.reply.get("content") or "",
                                                   tool_calls=record.reply.get("tool_calls") or None,
                                                   provenance=Provenance("model", True), id=reply_id,
                                                   incomplete=reply.incomplete))
            thread.session.next_id = thread.conversation.next_id
        thread.session.updated = _iso(time.time())
        self.save(thread)
        tapped.done = True
        self.on_change("end", tapped)

    # -- pieces ---------------------------------------------------------------------------------------
    def format_findings(self, thread: Thread, index: int, record: RequestRecord, parsed: Parsed, view: Any) -> Any:
        """What the body's format says beside its messages, in the view's notes: what the server leaves out, the
        context it holds (previous_response_id), Anthropic's cache breakpoints."""
        from tui.tap.formats_view import findings

        notes = [*origin_notes(record), *findings(record, parsed, view, thread.engine or self.engine)]
        if not notes:
            return view
        view = replace(view, hidden=replace(view.hidden, notes=[*notes, *view.hidden.notes]))
        thread.replayer._views[index] = view  # noqa: SLF001 - the same rendering, its notes completed
        return view

    def open_thread(self, conversation: Conversation, engine: Engine, model: str, exchange: Exchange) -> Thread:
        from tui.controller.workbench import template_spec

        ident, lock = self.claim(f"{self.prefix}-{conversation.number}")
        session = Session(id=ident, title=title_of(conversation, exchange.client, model), base_url=self.upstream,
                          model=model,
                          template=template_spec(engine.template), tokenizer=engine.tokenizer.name,
                          policy=asdict(PolicySettings("keep-all")), fences=False)
        replayer = TapReplayer(session, engine)
        thread = Thread(conversation, session, replayer, self.folder / f"{session.id}.ctxpane.json", engine=engine,
                        lock=lock)
        self.threads[conversation.number] = thread
        return thread

    def settle(self, record: RequestRecord, session: Session, view: Any, reply: Any, engine: Engine,
               exchange: Exchange) -> None:
        from tui.client.figures import receipt_after, reported_from_reply
        from tui.sessions.price_files import load_prices
        from tui.sessions.receipts import settle

        if exchange.status != 200:
            return
        if self.prices is None:
            self.prices = load_prices()[0]
        try:
            receipt = receipt_after(view, reply, engine.info, max_tokens_of(record))
        except Exception:  # noqa: BLE001 - odd figures: nothing to compare
            receipt = None
        settle(record, session, view, reported_from_reply(reply), receipt, self.prices, engine.cache_rule)


def bounded_reply(thread: Thread, record: RequestRecord) -> None:
    """The reply as its record and the transcript keep it: the ends of a long text, reasoning or tool-call argument
    (tui/tap/replies.py), less once the conversation's kept texts are large, so its file always opens; the record
    says what was cut, field by field."""
    each = TEXT_END_KEPT if thread.reply_chars < TEXT_BUDGET else TEXT_END_KEPT_LATE
    cuts: dict[str, int] = {}

    def kept(value: str, field: str) -> str:
        text, cut = kept_ends(value, each)
        thread.reply_chars += len(text)
        if cut:
            cuts[field] = cuts.get(field, 0) + cut
        return text
    for field in ("content", "reasoning"):
        if isinstance(record.reply.get(field), str):
            record.reply[field] = kept(record.reply[field], field)
    calls = record.reply.get("tool_calls")
    if isinstance(calls, list):  # copies: the reply's own calls are left whole
        record.reply["tool_calls"] = [_call_kept(call, kept) for call in calls]
    if cuts:
        record.reply["cut"] = {"characters": sum(cuts.values()), "fields": cuts,
                               "kept": f"the first and last {each:,} characters"}


def _call_kept(call: Any, kept: Callable[[str, str], str]) -> Any:
    function = call.get("function") if isinstance(call, dict) else None
    arguments = function.get("arguments") if isinstance(function, dict) else None
    if not isinstance(arguments, str):
        return call
    return {**call, "function": {**function, "arguments": kept(arguments, "tool_calls")}}


def _family_key(model: str) -> str:
    from tui.context.families.registry import family_for_model
    found = family_for_model(model)
    return found.key if found else ""


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="milliseconds")

