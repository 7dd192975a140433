"""Was the answer in the window? For each request, whether a phrase reached what the model was sent, where it
stood, and whether the reply holds it (a string check: a reply can hold a phrase it did not take from the window).

Pure: each request comes in as a RequestWindow, the messages its server rendered as they were sent (fences
included), built by the caller from a session's records (tui/sessions/window_sources.py) or from the pane's view
of the request not sent yet (`current_window`).

Matching: a letter matches itself in either case (each letter folded alone, so offsets are the text's own), and a
run of spaces in the phrase matches any run of whitespace, a line break included: "blue heron" finds "BLUE\nHeron".
Accents, punctuation and digits match exactly. Spaces at the phrase's ends are ignored.

Bounded, newest first: at most MAX_REQUESTS sent requests, and no new one once MAX_CHARS characters were read; the
result says how many older requests were left unsearched. A phrase is cut to MAX_PHRASE characters; per request
the first MAX_PLACES occurrences are kept, their count is exact.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from enum import Enum
from typing import Callable, Sequence

from tui.context.document import Document, Span
from tui.context.json_types import WireMessage
from tui.context.messages import Message, content_text
from tui.context.policy.truncation import LedgerEntry
from tui.context.tokens.counting import TokenIndex

MAX_PHRASE = 200  # characters of the phrase searched for
MAX_REQUESTS = 5_000  # sent requests searched, newest first
MAX_CHARS = 40_000_000  # characters read before no further request is started
MAX_PLACES = 20  # occurrences kept per request (the count of them all is kept too)


class Part(Enum):
    """Which part of a message the phrase was found in."""

    CONTENT = "text"
    REASONING = "reasoning"
    TOOL_CALL = "tool call"


class Standing(Enum):
    """Whether the phrase reached a request's window."""

    PRESENT = "present"
    ABSENT = "absent"
    UNREADABLE = "unreadable"  # the stored body could not be read back: nothing can be said


class ReplyCheck(Enum):
    """A plain string check of the reply: not proof the reply used what the window held."""

    CONTAINS = "contains"
    LACKS = "lacks"
    NO_REPLY = "no reply"  # not sent yet, or nothing came back


# The document's span kinds that, in order, spell a part's text (a fenced message's wrapper is in its content).
PART_KINDS = {Part.CONTENT: frozenset({"content", "fence"}), Part.REASONING: frozenset({"reasoning"})}


@dataclass(frozen=True)
class WindowMessage:
    """One message of a request's window, as sent."""

    role: str
    message_id: str  # its session id ("" when the record does not say)
    parts: tuple[tuple[Part, str], ...]


@dataclass(frozen=True)
class RenderedDocument:
    """The rendered document of a request, for token positions: its message i is the window's message i."""

    document: Document
    tokens: TokenIndex


@dataclass(frozen=True)
class RequestWindow:
    number: int  # the request's number; the request not sent yet has the number it will be sent as
    sent: bool
    messages: tuple[WindowMessage, ...]
    reply: str | None = None  # the reply's text and tool calls (None: not sent, or nothing came back)
    left_out: tuple[LedgerEntry, ...] = ()  # what the policy left out of this request
    rendered: RenderedDocument | None = None
    unreadable: str = ""  # why the stored body could not be read ("" when it was)
    held_elsewhere: bool = False  # a Responses request continuing a response: the server held more than the body


@dataclass(frozen=True)
class Occurrence:
    index: int  # the message's place in the request (0: its first message)
    place: int | None  # its #N in the transcript now; None: no longer in the session (or the record does not say)
    message_id: str
    role: str
    part: Part
    offset: int  # characters before it in that part's text, as sent
    token: int | None  # tokens before it in the rendered document (None: not rendered here)


@dataclass(frozen=True)
class LeftOutHolder:
    """A message that holds the phrase now and that the policy left out of the request."""

    place: int | None
    message_id: str
    role: str
    policy: str
    reason: str
    since: int  # the first request it was left out of


@dataclass(frozen=True)
class RequestFinding:
    number: int
    sent: bool
    standing: Standing
    occurrences: tuple[Occurrence, ...] = ()  # the first MAX_PLACES
    count: int = 0  # every occurrence in the window
    reply: ReplyCheck = ReplyCheck.NO_REPLY
    left_out: tuple[LeftOutHolder, ...] = ()
    unreadable: str = ""
    held_elsewhere: bool = False


@dataclass(frozen=True)
class WindowSearch:
    phrase: str  # as searched (cut to MAX_PHRASE, ends stripped)
    cut: bool  # the phrase typed was longer than MAX_PHRASE
    findings: tuple[RequestFinding, ...] = ()  # oldest first; the request not sent yet last
    unsearched: int = 0  # older sent requests not searched: the bound was reached
    cancelled: bool = False

    def numbers(self, standing: Standing) -> list[int]:
        return [f.number for f in self.findings if f.sent and f.standing is standing]


@dataclass(frozen=True)
class Limits:
    requests: int = MAX_REQUESTS
    chars: int = MAX_CHARS
    places: int = MAX_PLACES


@dataclass
class _Reading:
    """What a search carries from request to request: the pattern, where messages are now, what was read."""

    pattern: re.Pattern[str]
    transcript: Sequence[Message]
    limits: Limits
    places: dict[str, int] = field(default_factory=dict)
    read: int = 0

    def __post_init__(self) -> None:
        self.places = {m.id: i for i, m in enumerate(self.transcript) if m.id}


def phrase_pattern(phrase: str) -> re.Pattern[str] | None:
    """The pattern a phrase is matched with (see the module's docstring), or None for a phrase of no words."""
    words = phrase[:MAX_PHRASE].split()
    if not words:
        return None
    return re.compile(r"\s+".join(re.escape(word) for word in words), re.IGNORECASE)


def wire_window_message(message: WireMessage, message_id: str = "") -> WindowMessage:
    """A chat-completions message as the window held it: its text, its reasoning and its tool calls."""
    parts: list[tuple[Part, str]] = [(Part.CONTENT, content_text(message.get("content")))]
    if isinstance(message.get("reasoning_content"), str):
        parts.append((Part.REASONING, message["reasoning_content"]))
    calls = message.get("tool_calls")
    if isinstance(calls, list) and calls:
        parts.append((Part.TOOL_CALL, "\n".join(_call_text(call) for call in calls)))
    return WindowMessage(str(message.get("role", "")), message_id, tuple(parts))


def _call_text(call: object) -> str:
    """A tool call as one line: its name and its arguments (as the body has them, or as JSON)."""
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict):
        return ""
    arguments = function.get("arguments", "")
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False)
    return f"{function.get('name', '')}({arguments})"


def reply_text(reply: dict[str, object]) -> str | None:
    """A stored reply's text and tool calls, as the reply check reads them (None: nothing came back)."""
    content = reply.get("content")
    content = content if isinstance(content, str) else ""
    calls = reply.get("tool_calls")
    called = "\n".join(_call_text(c) for c in calls) if isinstance(calls, list) else ""
    text = "\n".join(piece for piece in (content, called) if piece)
    return text or None


def search_windows(phrase: str, sent: Sequence[Callable[[], RequestWindow]], current: RequestWindow | None,
                   transcript: Sequence[Message], limits: Limits = Limits(),
                   cancelled: Callable[[], bool] = lambda: False) -> WindowSearch:
    """Search the request not sent yet (`current`) and the sent ones (`sent`, oldest first, each read when its
    turn comes), newest first, within `limits`; `transcript` is the session's messages now (for #N)."""
    pattern = phrase_pattern(phrase)
    said = " ".join(phrase[:MAX_PHRASE].split())
    if pattern is None:
        return WindowSearch(said, len(phrase) > MAX_PHRASE)
    reading = _Reading(pattern, transcript, limits)
    findings = [find_in_window(current, reading)] if current is not None else []
    searched = 0
    for read in reversed(sent):
        if searched >= limits.requests or (searched and reading.read >= limits.chars) or cancelled():
            break
        findings.append(find_in_window(read(), reading))
        searched += 1
    return WindowSearch(said, len(phrase) > MAX_PHRASE, tuple(reversed(findings)), len(sent) - searched,
                        cancelled())


def find_in_window(window: RequestWindow, reading: _Reading) -> RequestFinding:
    if window.unreadable:
        return RequestFinding(window.number, window.sent, Standing.UNREADABLE, unreadable=window.unreadable)
    found, count = _occurrences(window, reading)
    reply = ReplyCheck.NO_REPLY if window.reply is None else \
        ReplyCheck.CONTAINS if reading.pattern.search(window.reply) else ReplyCheck.LACKS
    standing = Standing.PRESENT if count else Standing.ABSENT
    return RequestFinding(window.number, window.sent, standing, tuple(found), count, reply,
                          _left_out_holders(window, reading), held_elsewhere=window.held_elsewhere)


def _occurrences(window: RequestWindow, reading: _Reading) -> tuple[list[Occurrence], int]:
    found: list[Occurrence] = []
    count = 0
    spans = _spans_by_message(window.rendered.document) if window.rendered is not None else {}
    for index, message in enumerate(window.messages):
        place = reading.places.get(message.message_id) if message.message_id else None
        for part, text in message.parts:
            reading.read += len(text)
            for match in reading.pattern.finditer(text):
                count += 1
                if len(found) < reading.limits.places:
                    token = _token_at(window.rendered, spans.get(index, []), part, text, match.start())
                    found.append(Occurrence(index, place, message.message_id, message.role, part, match.start(),
                                            token))
    return found, count


def _left_out_holders(window: RequestWindow, reading: _Reading) -> tuple[LeftOutHolder, ...]:
    """The left-out messages that hold the phrase in the session now (their text then is not in the record)."""
    holders = []
    for entry in window.left_out:
        place = reading.places.get(entry.message_id)
        if place is not None and reading.pattern.search(reading.transcript[place].text()):
            holders.append(LeftOutHolder(place, entry.message_id, entry.role, entry.policy, entry.reason,
                                         entry.since_request))
    return tuple(holders)


def _spans_by_message(document: Document) -> dict[int, list[Span]]:
    spans: dict[int, list[Span]] = {}
    for span in document.spans:
        if span.message is not None:
            spans.setdefault(span.message, []).append(span)
    return spans


def _token_at(rendered: RenderedDocument | None, spans: list[Span], part: Part, text: str, offset: int) -> int | None:
    """Tokens before `offset` of a part's text in the rendered document; None when the document does not spell the
    part out as it was sent (a template that changed it, a tool call it writes its own way)."""
    kinds = PART_KINDS.get(part)
    if rendered is None or kinds is None:
        return None
    own = [span for span in spans if span.kind in kinds]
    if "".join(rendered.document.span_text(span) for span in own) != text:
        return None
    for span in own:
        if offset < span.length:
            return rendered.tokens.tokens_before(span.start + offset)
        offset -= span.length
    return None


def current_window(number: int, wire: Sequence[WireMessage], message_ids: Sequence[str],
                   left_out: Sequence[LedgerEntry], rendered: RenderedDocument) -> RequestWindow:
    """The request not sent yet, from the pane's view: its wire as rendered, with its document for token places."""
    ids = list(message_ids) if len(message_ids) == len(wire) else [""] * len(wire)
    messages = tuple(wire_window_message(m, ident) for m, ident in zip(wire, ids))
    return RequestWindow(number, False, messages, None, tuple(left_out), rendered)
