"""Responses state the client does not send: a request with `previous_response_id` carries only its new input,
and the server holds the rest. The context is rebuilt from the earlier responses of the same chain the tap
recorded (and said so); a response the tap never saw is said to be missing, never taken for the whole context."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from tui.context.formats import Parsed
from tui.context.formats.replies import Translator
from tui.sessions.model import RequestRecord
from tui.sessions.replay import held_context, reply_messages, with_held

KEPT_CONTEXTS = 256  # the newest responses whose whole context is kept in memory; an older one is read from the file


@dataclass
class Held:
    """What the server holds before a request's input, as far as this recording knows it."""

    previous_response_id: str | None = None
    thread: int | None = None  # the conversation of the response it continues
    from_request: int | None = None
    chain: list[int] = field(default_factory=list)  # the earlier requests of the chain, oldest first
    context: list[dict[str, Any]] = field(default_factory=list)

    @property
    def missing(self) -> bool:
        return self.previous_response_id is not None and self.from_request is None

    def messages(self, parsed: Parsed) -> list[dict[str, Any]]:
        return with_held(parsed, self.context)

    def note(self) -> str:
        if self.previous_response_id is None:
            return ""
        shown = self.previous_response_id[:80]
        if self.missing:
            return (f"context held by the server: this request continues response {shown}, which this tap did not "
                    "see; the document shows only this request's own input, the earlier context is missing")
        count = len(self.chain)
        return (f"context held by the server: {count} earlier response{'s' if count != 1 else ''}, rebuilt from this "
                f"recording (previous_response_id {shown}: request {self.from_request} and the chain before it)")

    def record(self) -> dict[str, Any] | None:
        if self.previous_response_id is None:
            return None
        return {"previous_response_id": self.previous_response_id[:4096], "from_request": self.from_request,
                "chain": list(self.chain), "missing": self.missing, "note": self.note()[:4000]}


class Chains:
    def __init__(self) -> None:
        self.responses: dict[str, tuple[int, int]] = {}  # response id -> (conversation, request number)
        # response id -> the context a request continuing it has: kept as it is made, so that a chain of n requests
        # costs n steps, not the n² of reading every earlier request of the chain from its file again
        self.contexts: OrderedDict[str, list[dict[str, Any]]] = OrderedDict()

    def held(self, parsed: Parsed, threads: dict[int, Any]) -> Held:
        previous = parsed.previous_response_id
        if previous is None:
            return Held()
        found = self.responses.get(previous)
        thread = threads.get(found[0]) if found is not None else None
        if found is None or thread is None:
            return Held(previous)
        conversation, number = found
        earlier = thread.session.requests[number - 1]
        chain = [*((earlier.context or {}).get("chain") or []), number]
        context = self.contexts.get(previous)
        if context is None:
            context = held_context(thread.session, chain, len(thread.session.requests) + 1)
        return Held(previous, conversation, number, chain, list(context))

    @staticmethod
    def answered(translator: Translator, thread: Any, record: RequestRecord) -> None:
        """The reply's own figures, as the provider gave them, and (Responses) the id a later request may name."""
        if translator.usage:
            record.reply["provider_usage"] = {key: value for key, value in translator.usage.items()
                                              if isinstance(key, str) and len(key) <= 100}
        if translator.response_id:
            record.reply["response_id"] = translator.response_id

    def remember(self, record: RequestRecord, conversation: int, carried: list[dict[str, Any]]) -> None:
        """A response a later request may continue: where it was recorded, and the context it ends (`carried`:
        what its server held and its own input; then its reply, as the session file keeps it)."""
        ident = record.reply.get("response_id")
        if not isinstance(ident, str) or not ident:
            return
        self.responses[ident] = (conversation, record.number)
        self.contexts[ident] = [*carried, *reply_messages(record.reply)]
        self.contexts.move_to_end(ident)
        while len(self.contexts) > KEPT_CONTEXTS:
            self.contexts.popitem(last=False)

    @staticmethod
    def carried(held: Held, parsed: Parsed) -> list[dict[str, Any]]:
        """The context a request's own input adds to what its server held (its instructions are not carried)."""
        return [*held.context, *(m for m, source in zip(parsed.messages, parsed.sources) if source >= 0)]
