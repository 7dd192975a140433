"""The app's state and actions, without any widget: session + settings -> engine -> RequestView.

The Controller (tui/controller/controller.py) calls these methods; no view calls them directly.
"""

from __future__ import annotations

import hashlib
import threading
import time
from array import array
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

from tui.client.reply import Reply
from tui.context.cache.llamacpp import LlamaCppCache
from tui.context.cache.rules import rule_known
from tui.context.policy.truncation import PolicySettings
from tui.context.cache.prefix import RequestShape
from tui.context.untrusted.fences import FenceStyle
from tui.context.tokens.draft_splice import splice_message
from tui.context.messages import KEY_CHARS, Message, Provenance
from tui.context.request import RequestSettings, RequestView, build_request, empty_view, refreshed_after_splice
from tui.context.templates.library import ChatTemplate
from tui.context.tools.definitions import ToolSet, tools_to_send
from tui.context.tokens.counting import SegmentCache
from tui.context.tokens.tokenizers import Tokenizer
from tui.sessions.model import RequestRecord, Session, now_iso
from tui.sessions.receipts import request_series
from tui.sessions.session_template import builtin_defaults, template_from_session  # noqa: F401 - the app imports it here

if TYPE_CHECKING:
    from tui.context.policy.summary_call import SummaryCall  # (loaded by the first summary call)

DRAFT_ID = "draft"


class CharEstimate:
    """Stands in until a real tokenizer has loaded: one token per four characters (an estimate)."""

    name = "estimate (4 chars/token)"

    def plain_starts(self, text: str) -> tuple[array[int], bool]:
        return array("q", range(0, len(text), 4)), False

    def special_count(self, text: str) -> int:
        return 1

    def specials(self) -> set[str]:
        return set()


def template_spec(template: ChatTemplate) -> dict[str, Any]:
    if template.origin == "builtin":  # by name; with the defaults it was given (plain ChatML: no default system)
        changed = {k: v for k, v in template.defaults.items() if builtin_defaults(template.name).get(k) != v}
        return {"name": template.name, "origin": "builtin", **({"defaults": changed} if changed else {})}
    return {"name": template.name, "origin": template.origin, "text": template.source or "",
            "defaults": template.defaults}


@dataclass
class Workbench:
    session: Session
    template: ChatTemplate
    tokenizer: Tokenizer = field(default_factory=CharEstimate)
    exact: bool | None = None  # set when the server vouches for the tokenizer
    content_specials: bool = False  # the server reads control strings in message text as tokens (llama.cpp)
    api: str = "chat"  # the API requests are sent in (chat, responses, messages): recorded as sent
    cache_rule: str = "llama.cpp"
    server_cache: LlamaCppCache | None = None  # a copy of the server cache's model (caching.py), predicted against
    draft: str = ""
    previous: RequestShape | None = None
    cache: SegmentCache = field(default_factory=SegmentCache)
    view: RequestView | None = None
    spliced: RequestView | None = field(default=None, repr=False)  # the last view a keystroke spliced (refreshed)
    tokenizer_pending: bool = False  # the estimate stands in while the real tokenizer loads: no restore yet
    restores: int = 0  # how often a stored request was rendered to find the boundary (tests count them)
    _dropped_since: dict[str, int] = field(default_factory=dict)
    summaries_asked: set[frozenset[str]] = field(default_factory=set)  # dropped ranges a summary call was made for
    reviews: dict[str, Any] = field(default_factory=dict)  # the reviewer's work on this session's tool calls (tool_calls.py)
    loaded_tools: ToolSet = field(default_factory=ToolSet)  # the tool file loaded: its definitions are the ones sent
    tools_from_loaded_file: bool = False  # session.tools were written from a tool file here, not read from the file
    _generation: int = 0  # bumped by whatever outdates `previous`: template, tokenizer, a new request
    _restored_for: int = -1  # the generation `previous` was restored or recorded for
    _restore_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)  # one restore at a time
    _state_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)  # held for a moment only

    # -- settings --------------------------------------------------------------------------
    @property
    def policy(self) -> PolicySettings:
        return self.session.policy_settings()

    def settings(self) -> RequestSettings:
        return RequestSettings(self.template, self.tokenizer, dict(self.session.variables), self.tools_sent(),
                               True, self.policy, FenceStyle(enabled=self.session.fences), self.cache_rule, self.exact,
                               self.content_specials, model=self.session.model, base_url=self.session.base_url)

    def tools_sent(self) -> list[Any] | None:
        """The tool definitions the model is sent: the loaded tool file's win over those the session stores."""
        return tools_to_send(self.loaded_tools, self.session.tools)

    def set_template(self, template: ChatTemplate) -> None:
        self.template = template
        self.session.template = template_spec(template)
        self.cache = SegmentCache()
        self._outdate()  # the boundary is read again, by the next compute (off the event loop)

    def set_tokenizer(self, tokenizer: Tokenizer, exact: bool | None = None) -> None:
        self.tokenizer, self.exact = tokenizer, exact
        if not isinstance(tokenizer, CharEstimate):
            self.session.tokenizer = tokenizer.name
        self.tokenizer_pending = False
        self.cache = SegmentCache()
        self._outdate()

    def _outdate(self) -> None:
        with self._state_lock:
            self._generation += 1

    @property
    def restore_owed(self) -> bool:
        return self._restored_for != self._generation and not self.tokenizer_pending

    def read_previous(self) -> tuple[RequestShape | None, dict[str, int]]:
        """The last request sent, re-rendered from its record alone: its shape and what it had dropped.

        Pure (no state changes), so it can run in a worker; only the last record is rendered.
        """
        if not self.session.requests:
            return None, {}
        from tui.sessions.replay import Replayer
        last = self.session.requests[-1]
        dropped = {d.get("message_id", ""): d.get("since_request", last.number) for d in last.dropped}
        try:
            replayer = Replayer(self.session, self.template, self.tokenizer, self.cache_rule)
            replayer.cache = self.cache  # the conversation's segments are counted once for both
            return replayer.stored_shape(len(self.session.requests) - 1), dropped
        except Exception:  # noqa: BLE001 - a record this template cannot render: no boundary, not a crash
            return None, dropped

    def restore_previous(self) -> None:
        """Bring `previous` up to date with the template and tokenizer, if it is not (any thread).

        Runs the rendering at most once per change; a result that a newer change or a request sent
        meanwhile has outdated is thrown away, never stored over the newer state.
        """
        with self._restore_lock:  # two computes at once: the second waits and finds it done
            generation = self._generation
            if self._restored_for == generation:
                return
            self.restores += 1
            shape, dropped = self.read_previous()
            with self._state_lock:  # checked and stored at once: nothing newer can land in between
                if generation == self._generation:
                    self.previous, self._dropped_since, self._restored_for = shape, dropped, generation

    def set_policy(self, **changes: Any) -> None:
        policy = asdict(self.policy) | changes
        PolicySettings(**policy)  # validates; raises PolicyError
        self.session.policy = policy

    # -- the view ----------------------------------------------------------------------------
    def messages_with_draft(self) -> list[Message]:
        messages = list(self.session.messages)
        if self.draft:
            messages.append(Message("user", self.draft, provenance=Provenance("user", True), id=DRAFT_ID))
        return messages

    @property
    def request_number(self) -> int:
        return len(self.session.requests) + 1

    def compute(self, with_draft: bool = True) -> RequestView:
        """The full computation (render, policy, counts, fences, cache prefix), without storing it.

        Safe to run in a worker thread: it reads the session and writes only to the segment cache.
        """
        messages = self.messages_with_draft() if with_draft else list(self.session.messages)
        if not messages:
            return empty_view(self.settings())
        if self.restore_owed:
            self.restore_previous()
        return build_request(messages, self.settings(), self.previous, self.request_number,
                             dict(self._dropped_since), self.cache, server=self.server_cache, now=time.time())

    def refreshed(self) -> RequestView | None:
        """The spliced view with what the splice left stale computed from its document (no render), or None
        when a full computation is owed (request.refreshed_after_splice). Safe in the worker, as compute is."""
        view = self.view
        if view is None or view is not self.spliced or self.restore_owed or not self.draft:
            return None
        return refreshed_after_splice(view, self.messages_with_draft(), self.settings(), self.previous, self.cache,
                                      server=self.server_cache, now=time.time())

    def rebuild(self) -> RequestView:
        self.view = self.compute()
        return self.view

    def set_draft(self, text: str) -> bool:
        """Update the draft. True: the view was updated in place (splice). False: a full rebuild is owed."""
        had_draft, self.draft = bool(self.draft), text
        view = self.view
        if view is None or not had_draft or not text or not self.template.copies_text_verbatim() \
                or getattr(self.tokenizer, "remote", False):
            # a tokenizer that asks the server waits for the full rebuild, in a worker
            return False
        draft_index = len(view.origin) - 1
        if draft_index < 0 or view.origin[draft_index] != len(self.session.messages):
            return False
        spliced = splice_message(view.snapshot.document, view.snapshot.counts, draft_index, text, self.tokenizer,
                                 self.template.special_strings(), self.cache)
        if spliced is None:
            return False
        document, counts = spliced
        snapshot = replace(view.snapshot, document=document, counts=counts,
                           wire=view.snapshot.wire[:-1] + [{"role": "user", "content": text}])
        self.view = self.spliced = replace(view, snapshot=snapshot,
                                           keep_all_tokens=view.keep_all_tokens + counts.total - view.snapshot.counts.total)
        return True

    # -- sending -------------------------------------------------------------------------------
    def request_body(self, view: RequestView, stream: bool = True) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.session.model or "model", "messages": view.snapshot.wire}
        body.update({k: v for k, v in self.session.params.items() if k not in ("messages", "model", "stream")})
        tools = self.tools_sent()
        if tools:
            body["tools"] = tools
        if self.policy.max_tokens:
            body["max_tokens"] = self.policy.max_tokens
        if stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        # llama.cpp, its cache modelled: the tokens it generates (ServerCache). Not beside tools when streaming: the
        # server refuses that request ("logprobs is not supported with tools + stream"), and the reply's text stands in
        if self.server_cache is not None and not (stream and body.get("tools")):
            body.setdefault("logprobs", True)  # (what the user set in [params] stays as set)
            body.setdefault("top_logprobs", 1)
        return body

    def commit_text(self, text: str) -> None:
        """The composer's text becomes a user message (the request is computed apart, off the event loop)."""
        if text.strip():
            self.session.messages.append(Message("user", text, provenance=Provenance("user", True),
                                                 id=self.new_id()))
        self.draft = ""

    def commit_draft(self) -> tuple[dict[str, Any], RequestView]:
        """Turn the draft into a user message; returns the body to send and the view it was built from."""
        if self.draft.strip():
            self.session.messages.append(Message("user", self.draft, provenance=Provenance("user", True),
                                                 id=self.new_id()))
        self.draft = ""
        view = self.rebuild()
        return self.request_body(view), view

    def new_id(self) -> str:
        return self.session.new_id()  # never an id used before in this file, even by a deleted message

    def start_record(self, body: dict[str, Any], view: RequestView) -> RequestRecord:
        from tui.context.formats.convert import wire_request
        record = RequestRecord(
            number=self.request_number, time=now_iso(), body=wire_request(body, self.api), format=self.api,
            reply={"content": "", "incomplete": True},
            document_hash=hashlib.sha256(view.document.text.encode()).hexdigest(),
            document_tokens=view.sent_tokens, tokens_exact=view.snapshot.counts.exact,
            dropped=[asdict(e) for e in view.ledger],
            predicted_cached=view.prefix.predicted_cached if rule_known(view.prefix.rule) else None,
            cache_cause=view.prefix.cause, keep_all_tokens=view.keep_all_tokens,
            template=self.template.name, tokenizer=self.tokenizer.name, message_count=len(self.session.messages),
            message_ids=list(view.shape.message_ids))
        self.session.requests.append(record)
        with self._state_lock:  # a restore still running for the older state is thrown away
            self._generation += 1
            self.previous, self._restored_for = view.shape, self._generation
            self._dropped_since = {e.message_id: e.since_request for e in view.ledger}
        self.session.updated = now_iso()
        return record

    def update_record(self, record: RequestRecord, reply: Reply, final: bool = False) -> None:
        """Called while a reply streams and when it ends: the record always holds what has arrived.

        Until the reply is final it is saved as incomplete, so a kill leaves an honest record.
        """
        record.reply = reply.to_record()
        if not final:
            record.reply["incomplete"] = True
        record.usage, record.timings = record.reply.get("usage"), record.reply.get("timings")  # as a file keeps them
        record.cached_reported = reply.cached_tokens

    def finish_reply(self, record: RequestRecord, reply: Reply) -> None:
        self.update_record(record, reply, final=True)
        message = reply.to_message()
        # A reply that brought nothing (refused, failed before its first token) adds no message: an empty
        # assistant turn would be sent with every later request. Its note goes under the question.
        if message["content"] or message.get("tool_calls") or message.get("reasoning_content"):
            self.session.messages.append(Message("assistant", message["content"], tool_calls=message.get("tool_calls"),
                                                 reasoning_content=message.get("reasoning_content"),
                                                 provenance=Provenance("model", True), id=self.new_id(),
                                                 incomplete=reply.incomplete))
            record.reply_id = self.session.messages[-1].id
        self.session.updated = now_iso()

    # -- message actions ---------------------------------------------------------------------------
    # Messages are replaced, never changed in place: a snapshot made before still shows the old one.
    def edit(self, index: int, text: str) -> None:
        self.session.messages[index] = replace(self.session.messages[index], content=text)

    def delete(self, index: int) -> None:
        self.session.reserve_ids()  # its id is never given again: undo may bring it back
        del self.session.messages[index]

    def toggle_pin(self, index: int) -> bool:
        message = self.session.messages[index] = replace(self.session.messages[index],
                                                         pinned=not self.session.messages[index].pinned)
        return message.pinned

    def set_system_prompt(self, text: str) -> None:
        messages = self.session.messages
        if messages and messages[0].role == "system":
            messages[0] = replace(messages[0], content=text)
        else:
            messages.insert(0, Message("system", text, provenance=Provenance("system_prompt", True),
                                       id=self.new_id()))

    def add_document(self, text: str, label: str, source: str = "document", key: str = "") -> Message:
        provenance = replace(Provenance.for_source(source, label), key=key.strip()[:KEY_CHARS])
        message = Message("user", text, provenance=provenance, id=self.new_id())
        self.session.messages.append(message)
        return message

    def add_image(self, part: dict[str, Any], label: str, source: str = "document") -> Message:
        """An attached image: one `image_url` part (its size kept for counting), untrusted like any file."""
        message = Message("user", [part], provenance=Provenance.for_source(source, label), id=self.new_id())
        self.session.messages.append(message)
        return message

    def truncate_after(self, index: int) -> None:
        """Resend from here: drop everything after message `index`."""
        del self.session.messages[index + 1:]

    # -- summarise policy -------------------------------------------------------------------------
    def summary_needed(self, view: RequestView | None) -> list[Message]:
        """The dropped messages a summary must stand for, when the current one does not (else [])."""
        from tui.context.request import summary_is_current
        if view is None or self.policy.name != "summarise" or not view.ledger \
                or summary_is_current(self.policy, view.ledger):
            return []
        if frozenset(e.message_id for e in view.ledger) in self.summaries_asked:
            return []  # asked once for this range (pending, failed or landed): never again
        return [self.session.messages[e.message] for e in view.ledger if e.message < len(self.session.messages)]

    def summary_request(self, messages: list[Message]) -> SummaryCall:
        """The model call that makes a summary, fitted to the window (renders a template: off the loop)."""
        from tui.context.request_fences import fence_escapes
        from tui.context.policy.summary_call import summary_call
        self.summaries_asked.add(frozenset(m.id for m in messages))
        return summary_call(messages, self.template, self.tokenizer, self.session.model,
                            self.policy.context_window, fence_escapes(self.template, self.tokenizer))

    def set_summary(self, text: str, cost: int, messages: list[Message]) -> None:
        self.set_policy(summary=text.strip(), summary_cost=cost, summary_of=[m.id for m in messages])

    def costs(self) -> list[dict[str, Any]]:
        return request_series(self.session.requests)
