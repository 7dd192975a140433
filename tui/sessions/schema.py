"""The session file's schema: every field typed and bounded, checked by msgspec before anything uses it.

Fields ctxpane owns are decoded into the structs below; unknown fields are ignored (and not
written back). Wire objects that must be kept exactly as they are (request bodies, replies,
tool calls, content parts, tool schemas) stay dicts, but their shape is checked against a
struct in `__post_init__`, so the rest of the code can rely on the fields it reads.
Nesting depth, duplicated keys and integer size are checked for the whole file in safe_io.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeAlias

from msgspec import Meta, Struct, field

from tui.sessions.receipt_schema import CostIn, FitIn, ReceivedIn
from tui.sessions.schema_types import (  # noqa: F401 - re-exported: callers read the bounds here
    BIG, Count, Free, Hash, Id, Key, Label, MAX_BRANCHES, MAX_MESSAGES, TITLE_LIMIT, TITLE_READ, MAX_NEXT_ID,
    MAX_PARTS, MAX_REQUESTS, MAX_TEMPLATE, MAX_TEXT, MAX_TOOLS, MAX_TOOL_CALLS, MAX_VARIABLES, ModelName, Name, Note,
    Number, PathText, PolicyName, RESERVED_VARIABLES, RequestCount, Role, SessionId, SignedCount, SourceName, Text,
    Time, VarName, WindowSize, Wire, conform)


Pixels: TypeAlias = Annotated[int, Meta(ge=1, le=100_000)]  # an image side


# -- shapes of wire objects (checked, kept as dicts) -------------------------------------------------------
class ImageUrl(Struct):
    url: Text = ""
    width: Pixels | None = None
    height: Pixels | None = None


class Part(Struct):
    type: Name
    text: Text = ""
    image_url: Text | ImageUrl | None = None
    width: Pixels | None = None
    height: Pixels | None = None
    format: Literal["PNG", "JPEG", "GIF", "WebP"] | None = None  # an attached image's, for its label
    name: Label | None = None  # an attached image's file name


class FunctionCall(Struct):
    name: Wire
    arguments: Text | Free = ""


class ToolCall(Struct):
    function: FunctionCall
    id: Wire = ""
    type: Wire = "function"


class FunctionSpec(Struct):
    name: Name
    description: Text | None = None
    parameters: Free | None = None


class Tool(Struct):
    type: Name
    function: FunctionSpec | None = None


Tools: TypeAlias = Annotated[list[Free], Meta(max_length=MAX_TOOLS)]


def check_tools(tools: list[Any] | None, where: str) -> None:
    if tools is not None:
        conform(tools, list[Tool], where)


# -- messages --------------------------------------------------------------------------------------------
class ProvenanceIn(Struct):
    source: SourceName | None = None
    trusted: bool | None = None
    label: Label = ""
    key: Label = ""  # a newer message with the same key supersedes this one (the curated policy)
    recorded: Label = ""  # when a memory was recorded (ISO 8601)


class WireMessageIn(Struct):
    """A message as a request body carries it: what a server reads (anything else in it is the client's own)."""

    role: Role
    content: Text | Annotated[list[Free], Meta(max_length=MAX_PARTS)] | None = ""
    name: Name | None = None
    tool_calls: Annotated[list[Free], Meta(max_length=MAX_TOOL_CALLS)] | None = None
    tool_call_id: Wire | None = None
    reasoning_content: Text | None = None
    reasoning: Text | None = None
    thinking: Text | None = None

    def __post_init__(self) -> None:
        if isinstance(self.content, list):
            conform(self.content, list[Part], ".content")
        if self.tool_calls is not None:
            conform(self.tool_calls, list[ToolCall], ".tool_calls")


class MessageIn(WireMessageIn):
    """A session's message: the wire fields and where it came from (never sent, never read from a body)."""

    provenance: ProvenanceIn | None = None
    pinned: bool = False
    id: Id = ""
    incomplete: bool = False


Messages: TypeAlias = Annotated[list[MessageIn], Meta(max_length=MAX_MESSAGES)]
WireMessages: TypeAlias = Annotated[list[WireMessageIn], Meta(max_length=MAX_MESSAGES)]


# -- session settings ------------------------------------------------------------------------------------
class EndpointIn(Struct):
    base_url: Annotated[str, Meta(max_length=4096)] = ""
    model: ModelName = ""


DefaultValue: TypeAlias = Annotated[str, Meta(max_length=100_000)] | bool | None  # a template default


class TemplateIn(Struct):
    name: Name = "chatml"
    origin: Annotated[str, Meta(max_length=8192)] = "builtin"  # "gguf:" or "file:" and a path
    text: Annotated[str, Meta(max_length=MAX_TEMPLATE)] | None = None
    defaults: Annotated[dict[VarName, DefaultValue], Meta(max_length=100)] = {}

    def __post_init__(self) -> None:
        check_names(self.defaults, ".defaults")


class PolicyIn(Struct):
    name: PolicyName = "keep-all"
    context_window: WindowSize | None = None
    max_tokens: Annotated[int, Meta(ge=0, le=10 ** 7)] = 0
    keep_last: Annotated[int, Meta(ge=1, le=10 ** 6)] = 4
    trim_over: Annotated[int, Meta(ge=20, le=10 ** 6)] = 400
    summary: Text | None = None
    summary_cost: Count = 0
    summary_of: Annotated[list[Id], Meta(max_length=MAX_MESSAGES)] = []


def check_names(variables: dict[str, Any], where: str) -> None:
    clash = sorted(RESERVED_VARIABLES & set(variables))
    if clash:
        raise ValueError(f"the name {clash[0]!r} is reserved by ctxpane - at `${where}`")


# -- request records -------------------------------------------------------------------------------------
class Usage(Struct):
    prompt_tokens: Count | None = None
    completion_tokens: Count | None = None
    total_tokens: Count | None = None
    prompt_tokens_details: dict[Key, Count | None] | None = None


class Timings(Struct):
    predicted_per_second: Number | None = None
    cache_n: Count | None = None
    prompt_n: Count | None = None  # read again by the cache model when the session is replayed
    predicted_n: Count | None = None


MAX_GENERATED = 1_000_000  # generated tokens described by one reply


class Reply(Struct):
    content: Text | None = None
    reasoning: Text | None = None
    # each generated token's text, when the server said
    generated: Annotated[list[Wire], Meta(max_length=MAX_GENERATED)] | None = None
    tool_calls: Annotated[list[ToolCall], Meta(max_length=MAX_TOOL_CALLS)] | None = None
    finish_reason: Wire | None = None
    usage: Usage | None = None
    timings: Timings | None = None
    model: ModelName | None = None
    incomplete: bool = False
    error: Annotated[str, Meta(max_length=100_000)] | None = None
    # measured by ctxpane (from sending to the first piece of the reply, and to its end); read leniently where they
    # are shown (tui/controller/message_facts.py): a figure for a header never makes a file unreadable
    first_token_ms: Any = None
    elapsed_ms: Any = None


class Body(Struct):
    messages: WireMessages = []
    tools: Tools | None = None


FormatName: TypeAlias = Literal["chat", "messages", "responses"]  # tui.context.formats.FormatKind's values
RequestNumber: TypeAlias = Annotated[int, Meta(ge=1, le=MAX_REQUESTS)]


class ContextIn(Struct):
    """The context a Responses request's server holds (previous_response_id), as the tap rebuilt it."""

    previous_response_id: Wire = ""
    from_request: RequestNumber | None = None  # the request of this session whose response it continues
    chain: Annotated[list[RequestNumber], Meta(max_length=MAX_REQUESTS)] = []  # the chain's earlier requests, oldest first
    missing: bool = False  # the tap did not see the response it continues: the context is not all here
    note: Note = ""


MAX_BOUNDED = 100  # notes of values kept as text (tui/sessions/bounds.py writes at most 21)
MAX_HEADERS = 200  # a tapped request's headers kept (tui/tap/sent.py)
HeaderValue: TypeAlias = Annotated[str, Meta(max_length=8192)]
HeaderPair: TypeAlias = Annotated[list[HeaderValue], Meta(min_length=2, max_length=2)]  # (a name is shorter: below)


def check_headers(headers: list[list[str]]) -> None:
    long = next((pair[0] for pair in headers if len(pair[0]) > 256), None)
    if long is not None:
        raise ValueError(f"a header name of {len(long)} characters: expected at most 256 - at `$.sent.headers`")


class SentIn(Struct):
    """How a tapped request was sent: what an export or a replay needs to send it again (credentials are ***)."""

    method: Annotated[str, Meta(max_length=16)] = "POST"
    path: Annotated[str, Meta(max_length=8192)] = ""  # the path and query as the client wrote them
    headers: Annotated[list[HeaderPair], Meta(max_length=MAX_HEADERS)] = []  # [name, value] pairs

    def __post_init__(self) -> None:
        check_headers(self.headers)


class ParentIn(Struct):
    """The conversation (and, when the traffic says, the tool call) that started a sub-agent's conversation."""

    conversation: Annotated[int, Meta(ge=1, le=BIG)]
    session: Annotated[str, Meta(max_length=64)] = ""  # the parent conversation's session id (its file)
    request: RequestNumber | None = None
    call_id: Wire = ""
    tool: Wire = ""
    note: Note = ""


class IdentityIn(Struct):
    """The session identity the client sent (tui/tap/identity.py): a kind and a bounded value."""

    kind: Name
    value: Annotated[str, Meta(max_length=200)]
    source: Name = ""
    subagent: Name = ""  # the client's own word for a sub-agent (Codex's x-openai-subagent)
    request_kind: Name = ""  # the client's own word for the request (Codex's turn metadata: "turn", …)
    parent: ParentIn | None = None
    note: Note = ""  # another conversation of the same session, not linked (nothing says which started which)


class CompactionIn(Struct):
    """The client's own cut of a session's history: what left, what summary replaced it, the tokens before and after."""

    previous_request: RequestNumber | None = None
    left: Annotated[int, Meta(ge=0, le=MAX_MESSAGES)] = 0  # messages of the previous request no longer sent
    left_tokens: Count = 0
    summary_ids: Annotated[list[Id], Meta(max_length=MAX_MESSAGES)] = []  # the new messages that stand for them
    summary: Note = ""  # the start of the summary's text
    tokens_before: Count = 0  # the previous request's prompt
    tokens_after: Count = 0  # this one's


def check_wire_body(kind: str, body: dict[str, Any], where: str) -> None:
    """A Messages or Responses body, checked by its own schema (tui/context/formats/schemas.py) and its messages
    as a session's are."""
    from tui.context.formats import FormatError, FormatKind, parse_body

    try:
        parsed = parse_body(FormatKind(kind), body)
    except FormatError as exc:
        raise ValueError(f"{exc} - at `${where}`") from None
    conform(parsed.messages, WireMessages, f"{where} (as messages)")
    check_tools(parsed.tools, f"{where}.tools")


class DroppedIn(Struct):
    message: Annotated[int, Meta(ge=-1, le=MAX_MESSAGES)]
    message_id: Id
    role: Name
    tokens: Count
    policy: Name
    reason: Note
    since_request: RequestCount


class RequestIn(Struct):
    number: Annotated[int, Meta(ge=1, le=MAX_REQUESTS)]
    time: Time
    body: Free
    reply: Free = {}
    usage: Free | None = None
    cached_reported: Count | None = None
    timings: Free | None = None
    document_hash: Hash = ""
    document_tokens: Count = 0
    tokens_exact: bool = False
    dropped: Annotated[list[DroppedIn], Meta(max_length=MAX_MESSAGES)] = []
    predicted_cached: Count | None = None
    cache_cause: Note = ""
    cache_class: Name = ""
    cache_source: RequestCount | None = None  # 0: ctxpane's own summary call (cache_history.SUMMARY_CALL)
    cache_place: Name = ""
    keep_all_tokens: Count = 0
    template: Name = ""
    tokenizer: PathText = ""
    message_count: Annotated[int, Meta(ge=0, le=MAX_MESSAGES)] = 0
    message_ids: Annotated[list[Id], Meta(max_length=MAX_MESSAGES)] = []
    reply_id: Id = ""
    fit: FitIn | None = None
    received: ReceivedIn | None = None
    cost: CostIn | None = None
    format: FormatName = "chat"
    context: ContextIn | None = None
    sent: SentIn | None = None  # (absent in older files, and in the app's own requests)
    identity: IdentityIn | None = None
    compaction: CompactionIn | None = None
    bounded: Annotated[list[Note], Meta(max_length=MAX_BOUNDED)] = []  # values kept as text (tui/sessions/bounds.py)

    def __post_init__(self) -> None:
        if self.format == "chat":
            conform(self.body, Body, ".body")
            check_tools(self.body.get("tools"), ".body.tools")
        elif self.body:  # (a version-2 file's record comes without its body: checked when it is rebuilt)
            check_wire_body(self.format, self.body, ".body")
        conform(self.reply, Reply, ".reply")
        conform(self.usage, Usage | None, ".usage")
        conform(self.timings, Timings | None, ".timings")


# -- the file --------------------------------------------------------------------------------------------
class Header(Struct):
    """Read first, so that any other JSON file is told it is not a session before any field is judged."""

    format: Any = None
    version: Any = None


class BranchIn(Struct):
    """A continuation not shown: the messages after the message `fork` names ("" for the start)."""

    fork: Id  # "" for the very start
    messages: Messages
    label: Annotated[str, Meta(max_length=200)] = ""
    created: Time = ""


class SessionIn(Struct):
    format: Name
    version: Annotated[int, Meta(ge=1, le=1000)]
    messages: Messages
    id: SessionId | None = None
    # a longer one is clipped when read (parse.py), not a refused file
    title: Annotated[str, Meta(max_length=TITLE_READ)] = "Untitled"
    created: Time = ""
    updated: Time = ""
    endpoint: EndpointIn = field(default_factory=EndpointIn)
    template: TemplateIn = field(default_factory=TemplateIn)
    tokenizer: PathText = ""
    policy: PolicyIn = field(default_factory=PolicyIn)
    fences: bool = True
    variables: Annotated[dict[VarName, Any], Meta(max_length=MAX_VARIABLES)] = {}
    tools: Tools | None = None
    params: Annotated[Free, Meta(max_length=MAX_VARIABLES)] = {}
    requests: Annotated[list[RequestIn], Meta(max_length=MAX_REQUESTS)] = []
    next_id: Annotated[int, Meta(ge=0, le=MAX_NEXT_ID)] | None = None  # absent in older files
    branches: Annotated[list[BranchIn], Meta(max_length=MAX_BRANCHES)] = []  # absent in older files
    bounded: Annotated[list[Note], Meta(max_length=MAX_BOUNDED)] = []  # values kept as text (tui/sessions/bounds.py)
    draft: Text = ""  # the composer's unsent text (absent in older files, and when it was empty)

    def __post_init__(self) -> None:
        check_names(self.variables, ".variables")
        check_tools(self.tools, ".tools")
