"""Grouping tapped requests into conversations, and what the client itself left out: pure logic.

A client sends its whole history with each request. A request continues a conversation when it carries
the point where that conversation stood: the previous request's last message, or the reply to it.
Everything before that point the previous request carried and this one does not was cut by the client
(trimmed, compacted, or a system prompt rewritten): those are the client's own ledger entries.

Messages are matched by what they say (role, content, name, tool calls, tool call id), never by position:
a trimmed history shifts every position. Each matched message keeps its id across the conversation.

A client that says which session a request is of (tui/tap/identity.py) is believed first: a request is matched only
against the conversations of the same identity, never another's, however alike their messages. A request of a
session whose history it no longer continues is that session compacted (the same system prompt: its client's cut),
or one of its sub-agents (another system prompt: a conversation of its own, linked to the call that started it when
the parent's reply holds a tool call whose argument is the sub-agent's first message).
"""

from __future__ import annotations

import json
import hashlib
from difflib import SequenceMatcher
from dataclasses import dataclass, field
from typing import Any

from tui.tap.identity import Identity, IdentityKind

TRIMMED = "client"  # the author of an entry: the client, not a ctxpane policy
REWRITTEN = "client-rewrite"  # a system prompt the client replaced (the message stays, its text changed)
MAX_DIFF = 4_000_000  # messages before x messages now: past it, a cheaper match than a diff
MAX_OPEN = 200  # conversations a tap keeps matching against (the oldest are closed past it)
MAX_CALLS = 64  # a conversation's latest tool calls kept to link the sub-agents they start
CODEX_KINDS = (IdentityKind.CODEX_THREAD, IdentityKind.CODEX_SESSION)
MIN_LINKED = 16
MAX_PROMPTS = 3  # system prompts a conversation remembers (the latest: each may be long)
LONG_KEY = 64 * 1024  # characters of a message key kept as they are; a longer one is its start and a digest of it all
ALIKE = 0.8  # share of its lines a system prompt keeps and is still the same agent's (Claude Code changes a line)  # characters of a call's argument that may be a sub-agent's first message


def message_key(message: Any) -> str:
    """What a wire message says, as one comparable string (reasoning is left out: clients often drop it; so are
    cache_control marks, which a client moves to its newest turn; text parts count as their text, and tool-call
    arguments as the JSON they hold, so a reply read from a stream matches the turn a client sends back)."""
    if not isinstance(message, dict):
        return json.dumps(message, sort_keys=True, default=str)
    kept = {k: _said(k, message.get(k)) for k in ("role", "content", "name", "tool_calls", "tool_call_id")}
    kept = {k: v for k, v in kept.items() if v not in (None, "", [])}
    return _bounded(json.dumps(kept, sort_keys=True, ensure_ascii=False, default=str))


def _bounded(key: str) -> str:
    """A key of at most LONG_KEY characters (and a digest): each open conversation holds the keys of its last request
    and reply, and a reply of 30 MB held whole in every one kept the tap's memory in gigabytes. Keys are compared
    whole, so the digest of all of it stands for the rest; its start keeps a long system prompt's lines to liken."""
    if len(key) <= LONG_KEY:
        return key
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{key[:LONG_KEY]}\\n\x00{len(key)}:{digest}"


def _said(key: str, value: Any) -> Any:
    if key == "content" and isinstance(value, list):
        parts = [{k: v for k, v in p.items() if k != "cache_control"} if isinstance(p, dict) else p for p in value]
        if all(isinstance(p, dict) and set(p) <= {"type", "text"} and p.get("type") == "text" for p in parts):
            return "".join(str(p.get("text") or "") for p in parts)
        return parts
    if key == "tool_calls" and isinstance(value, list):
        return [_call(call) for call in value]
    return value


def _call(call: Any) -> Any:
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict):
        return call
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except (ValueError, RecursionError):
            pass
    return {"id": call.get("id"), "name": function.get("name"), "arguments": arguments}


def reply_message(reply: dict | None) -> dict | None:
    """The assistant message a reply adds to the history, as a client sends it back (None: no reply)."""
    if not reply or reply.get("incomplete") and not reply.get("content"):
        return None
    message: dict[str, Any] = {"role": "assistant", "content": reply.get("content") or ""}
    if reply.get("tool_calls"):
        message["tool_calls"] = reply["tool_calls"]
    if not message["content"] and not reply.get("tool_calls"):
        return None
    return message


@dataclass
class Vanished:
    """A message the previous request carried and this one does not."""

    index: int  # where it was in the previous request
    message_id: str
    role: str
    rewritten: bool  # a system prompt replaced by another (the same id, new text)


@dataclass(frozen=True)
class Call:
    """A tool call of a conversation's reply, by the digests of its long string arguments (a sub-agent's prompt)."""

    request: int  # the conversation's request whose reply made it
    call_id: str
    tool: str
    arguments: frozenset[str]


@dataclass(frozen=True)
class Link:
    """A sub-agent's conversation and what started it, as far as the traffic says."""

    conversation: int
    request: int | None = None
    call_id: str = ""
    tool: str = ""

    def said(self) -> str:
        if self.call_id:
            return (f"a sub-agent started by conversation {self.conversation}, request {self.request}: its tool call "
                    f"{self.tool[:60]} ({self.call_id[:60]}) carries this conversation's first message")
        return (f"a sub-agent of conversation {self.conversation}: the client names that conversation's thread as "
                "its parent")


@dataclass
class Match:
    """Where a request belongs: a conversation (or none: a new one), its message ids, what vanished."""

    conversation: "Conversation | None"
    message_ids: list[str]
    vanished: list[Vanished] = field(default_factory=list)
    resent: bool = False  # the same messages again (a retry): nothing new, nothing lost
    replaced: bool = False  # a session's request that no longer continues its history, kept in its conversation
    compacted: bool = False  # ...whose history's start left: the client compacted it (else it changed its last turns)
    parent: Link | None = None  # a new conversation of a session: a sub-agent of this one
    sibling: int | None = None  # ...or only another conversation of the same session (this one, its latest)


@dataclass
class Conversation:
    number: int
    model: str = ""
    client: str = ""
    keys: list[str] = field(default_factory=list)  # the last request's messages, by what they say
    ids: list[str] = field(default_factory=list)  # and their ids
    roles: list[str] = field(default_factory=list)
    reply_key: str | None = None  # the reply to the last request, once it is in
    reply_id: str | None = None
    next_id: int = 0
    requests: int = 0
    identity: Identity | None = None  # the session the client said it is of (None: grouped by what it says)
    prompts: list[str] = field(default_factory=list)  # the latest system prompts its requests sent (what they say)
    calls: list[Call] = field(default_factory=list)  # its replies' latest tool calls (a sub-agent's start)
    parent: Link | None = None

    def new_id(self) -> str:
        self.next_id += 1
        return f"m{self.next_id - 1}"

    def history(self) -> list[str]:
        """The conversation as the client would send it next: the last request and its reply."""
        return self.keys + ([self.reply_key] if self.reply_key is not None else [])

    def take(self, keys: list[str], ids: list[str], roles: list[str]) -> None:
        self.keys, self.ids, self.roles = keys, ids, roles
        self.reply_key = self.reply_id = None
        self.requests += 1
        prompt = _prompt_key(keys, roles)
        if prompt not in self.prompts:
            self.prompts = [*self.prompts[-(MAX_PROMPTS - 1):], prompt]

    def answered(self, reply: dict | None) -> str | None:
        """The reply to the last request arrived: it is the point the next request continues from."""
        message = reply_message(reply)
        if message is None:
            return None
        self.reply_key, self.reply_id = message_key(message), self.new_id()
        self.calls = [*self.calls, *_calls(message, self.requests)][-MAX_CALLS:]
        return self.reply_id

    def call_starting(self, messages: list) -> Call | None:
        """The tool call of this conversation whose argument is the first user message of `messages`."""
        first = next((m for m in messages if _role(m) == "user"), None)
        text = _text_of(first.get("content")) if isinstance(first, dict) else ""
        if len(text) < MIN_LINKED:
            return None
        digest = _digest(text)
        return next((call for call in reversed(self.calls) if digest in call.arguments), None)


def _anchor(conversation: Conversation, keys: list[str]) -> int | None:
    """Where in `keys` this conversation's last point is (its reply, else its last message), or None."""
    points = [conversation.reply_key] if conversation.reply_key is not None else []
    if conversation.keys:
        points.append(conversation.keys[-1])
    for point in points:
        for index in range(len(keys) - 1, -1, -1):
            if keys[index] == point:
                return index
    return None


MIN_SHARED = 2  # turns a cut history must share with the conversation, its anchor included...
DISTINCT_KEY = 120  # ...unless its anchor alone says this much (a short "thanks" ends many conversations)
PROMPT_ROLES = ("system", "developer")


def _cut_by_its_client(conversation: Conversation, keys: list[str], roles: list[str], anchor: int) -> bool:
    """Whether a request of the conversation's client that does not extend it but holds its last point is that
    conversation cut short (trimmed, compacted): more in common than one short message. A system prompt does not
    count: one app sends the same one in every conversation."""
    if len(keys[anchor]) >= DISTINCT_KEY:
        return True
    history = set(conversation.history())
    return sum(1 for key, role in zip(keys, roles) if key in history and role not in PROMPT_ROLES) >= MIN_SHARED


class Conversations:
    """The tap's open conversations; `place` finds where a request goes, `commit` records it there."""

    def __init__(self, numbering: "Conversations | None" = None) -> None:
        self.open: list[Conversation] = []
        self.count = 0
        self.numbering = numbering or self  # conversations of other formats share one numbering

    def continuing(self, number: int, messages: list) -> Match:
        """The match of a request that belongs to conversation `number` (a Responses chain says so)."""
        conversation = next((c for c in self.open if c.number == number), None)
        if conversation is None:
            return Match(None, [])
        ids, vanished = self._match_ids(conversation, [message_key(m) for m in messages], messages)
        return Match(conversation, ids, vanished)

    def place(self, messages: list, model: str = "", client: str = "", identity: Identity | None = None,
              parent: Identity | None = None) -> Match:
        """The conversation `messages` continue (the most recent of the same identity that fits), else a new one
        (not yet opened): of a session, its compaction or one of its sub-agents."""
        keys, roles = [message_key(m) for m in messages], [_role(m) for m in messages]
        mine = [c for c in reversed(self.open) if _same_identity(c.identity, identity)]
        found = self._continued(mine, keys, roles, messages, model, client, identity)
        if found is not None or identity is None or not identity.names_a_session:
            return found or Match(None, [], parent=self._parent_named(parent))
        return self._of_session(mine, keys, roles, messages, model, parent)

    def _of_session(self, mine: list[Conversation], keys: list[str], roles: list[str], messages: list, model: str,
                    parent: Identity | None) -> Match:
        """A session's request that continues none of its conversations: the one with its system prompt and model
        (compacted by its client when the start of its history left, else its latest turns sent again changed);
        else a new conversation, a sub-agent of the session's latest one."""
        prompt = _prompt_key(keys, roles)
        same = next((c for c in mine if any(_alike(prompt, p) for p in c.prompts)
                     and (not c.model or not model or c.model == model)), None)
        if same is not None:
            ids, vanished = self._match_ids(same, keys, messages)
            return Match(same, ids, vanished, compacted=_history_start_left(same, vanished), replaced=True)
        named = self._parent_named(parent)
        if named is not None or not mine:
            return Match(None, [], parent=named)
        for conversation in mine:
            call = conversation.call_starting(messages)
            if call is not None:
                return Match(None, [], parent=Link(conversation.number, call.request, call.call_id, call.tool))
        return Match(None, [], sibling=mine[0].number)  # (a title request, say: nothing says which started which)

    def _parent_named(self, parent: Identity | None) -> Link | None:
        """The conversation a request names as its parent (Codex's x-codex-parent-thread-id), when it is open."""
        if parent is None:
            return None
        found = next((c for c in reversed(self.open) if c.identity is not None and c.identity.value == parent.value
                      and c.identity.kind in CODEX_KINDS), None)  # (a root thread's id is its session's)
        return Link(found.number, found.requests or None) if found is not None else None

    def _continued(self, mine: list[Conversation], keys: list[str], roles: list[str], messages: list, model: str,
                   client: str, identity: Identity | None) -> Match | None:
        """The conversation of `mine` whose history these messages continue, by what they say (None: none)."""
        session = identity is not None and identity.names_a_session  # (a session may change its model midway)
        best: tuple[int, Conversation, int] | None = None  # (continuity, conversation, anchor)
        for conversation in mine:
            if not session and conversation.model and model and conversation.model != model:
                continue
            anchor = _anchor(conversation, keys)
            if anchor is None:
                continue
            if conversation.client and client and conversation.client != client:
                continue  # another program's request is never this conversation's (one client cannot join another's)
            # it extends the conversation when it starts with all of its last request: with its reply after it, a
            # retry, or the reply the client rewrote (an SDK that adds the tool call it made to the reply it got)
            sent, history = conversation.keys, conversation.history()
            extends = keys[:len(sent)] == sent if sent else keys[:len(history)] == history
            if not extends and not _cut_by_its_client(conversation, keys, roles, anchor):
                continue
            score = 2 if extends else 1
            if best is None or score > best[0]:
                best = (score, conversation, anchor)
            if extends:
                break
        if best is None:
            return None
        _score, conversation, _at = best
        ids, vanished = self._match_ids(conversation, keys, messages)
        return Match(conversation, ids, vanished, resent=keys == conversation.keys)

    def _match_ids(self, conversation: Conversation, keys: list[str],
                   messages: list) -> tuple[list[str], list[Vanished]]:
        """Each message's id: matched to the conversation so far by a diff of what they say (so a repeated
        text keeps the id of the copy it stands for, and a trimmed history lines up by its end)."""
        earlier = conversation.history()
        earlier_ids = conversation.ids + ([conversation.reply_id] if conversation.reply_id else [])
        ids: list[str | None] = [None] * len(keys)
        for a, b, size in _matching_blocks(earlier, keys):
            for offset in range(size):
                ids[b + offset] = earlier_ids[a + offset]
        used = {i for i in ids if i}
        vanished = [Vanished(index, ident, conversation.roles[index], False)
                    for index, ident in enumerate(conversation.ids) if ident not in used]
        # A system prompt replaced by another at the head keeps its id: it was rewritten, not trimmed.
        if ids and ids[0] is None and _role(messages[0]) in ("system", "developer"):
            old = next((v for v in vanished if v.index == 0 and v.role == _role(messages[0])), None)
            if old is not None:
                ids[0], old.rewritten = old.message_id, True
        return [ident or "" for ident in ids], vanished

    def commit(self, match: Match, messages: list, model: str = "", client: str = "",
               identity: Identity | None = None) -> Conversation:
        """Record the request where `place` put it (a new conversation when it fits none); fills the ids."""
        conversation = match.conversation
        if conversation is None:
            self.numbering.count += 1
            conversation = Conversation(self.numbering.count, model, client, identity=identity, parent=match.parent)
            self.open.append(conversation)
            if len(self.open) > MAX_OPEN:
                self.open.pop(0)
            match.message_ids = [""] * len(messages)
        else:
            self.open.remove(conversation)
            self.open.append(conversation)  # the most recent first when the next request is placed
        match.message_ids = [ident or conversation.new_id() for ident in match.message_ids]
        conversation.take([message_key(m) for m in messages], list(match.message_ids), [_role(m) for m in messages])
        return conversation


def _matching_blocks(earlier: list[str], keys: list[str]) -> list[tuple[int, int, int]]:
    """Runs of messages the two lists share, in order: a diff, or for very long histories (where a diff
    could take long) the common start and, after it, the common end."""
    if len(earlier) * len(keys) <= MAX_DIFF:
        return [tuple(block) for block in SequenceMatcher(None, earlier, keys, autojunk=False).get_matching_blocks()]
    head = 0
    while head < min(len(earlier), len(keys)) and earlier[head] == keys[head]:
        head += 1
    end = next((j + 1 for j in range(len(keys) - 1, head - 1, -1) if earlier and keys[j] == earlier[-1]), head)
    tail = 0  # the run that ends where the conversation stood (its reply, or its last message)
    while tail < min(len(earlier), end) - head and earlier[-1 - tail] == keys[end - 1 - tail]:
        tail += 1
    return [(0, 0, head), (len(earlier) - tail, end - tail, tail)]


def _role(message: Any) -> str:
    return str(message.get("role", "")) if isinstance(message, dict) else ""


def _same_identity(one: Identity | None, other: Identity | None) -> bool:
    return one is None and other is None or one is not None and one.same(other)


def _alike(one: str, other: str) -> bool:
    """Whether two system prompts (as message keys) are one agent's: equal, or sharing ALIKE of their lines (Claude
    Code's first line carries a hash that changes after a compaction; a sub-agent's prompt is another text)."""
    if one == other:
        return True
    lines, others = set(one.split("\\n")), set(other.split("\\n"))
    return len(lines & others) >= ALIKE * max(len(lines), len(others), 2)


def _history_start_left(conversation: Conversation, vanished: list[Vanished]) -> bool:
    """Whether the first turn of the conversation's last request (its system prompt aside) is no longer sent."""
    first = next((i for i, role in enumerate(conversation.roles) if role not in PROMPT_ROLES), None)
    return first is not None and any(v.index == first and not v.rewritten for v in vanished)


def _prompt_key(keys: list[str], roles: list[str]) -> str:
    """What a request's system prompt says ("" without one): a session's sub-agent sends another."""
    return keys[0] if keys and roles[0] in PROMPT_ROLES else ""


def _digest(text: str) -> str:
    return hashlib.sha256(text.strip().encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text") or "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def _calls(message: dict, request: int) -> list[Call]:
    """A reply's tool calls, each by the digests of its long string arguments (not the text: memory stays small)."""
    found = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            continue
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except (ValueError, RecursionError):
                arguments = {}
        strings = [v for v in (arguments.values() if isinstance(arguments, dict) else []) if isinstance(v, str)]
        found.append(Call(request, str(call.get("id") or "")[:200], str(function.get("name") or "")[:200],
                          frozenset(_digest(text) for text in strings if len(text) >= MIN_LINKED)))
    return found
