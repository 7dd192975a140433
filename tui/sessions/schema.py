"""The session file's schema: every field typed and bounded, checked by msgspec before anything uses it.

Fields ctxpane owns are decoded into the structs below; unknown fields are ignored (and not
written back). Wire objects that must be kept exactly as they are (request bodies, replies,
tool calls, content parts, tool schemas) stay dicts, but their shape is checked against a
struct in `__post_init__`, so the rest of the code can rely on the fields it reads.
Nesting depth, duplicated keys and integer size are checked for the whole file in safe_io.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta, Struct, field

from tui.context.budget import POLICIES
from tui.context.messages import ROLES, SOURCES

MAX_TEXT = 32 * 1024 * 1024  # characters in one message, reply or document
MAX_TEMPLATE = 1024 * 1024
MAX_MESSAGES = 100_000
MAX_REQUESTS = 100_000
MAX_TOOL_CALLS = 1_000
MAX_PARTS = 10_000
MAX_TOOLS = 1_000
MAX_VARIABLES = 1_000
BIG = 10 ** 12  # token counts and costs
MAX_NEXT_ID = 10 ** 12  # the message id counter (tui.sessions.model.MAX_NEXT_ID)

# Names the engine passes to a template itself: a variable with one of these names would collide.
RESERVED_VARIABLES = frozenset({"messages", "source", "render", "specials", "text", "origin", "name"})


def Str(limit: int) -> Any:  # noqa: N802 - reads as a type in the annotations below
    return Annotated[str, Meta(max_length=limit)]


def Int(low: int, high: int) -> Any:  # noqa: N802
    return Annotated[int, Meta(ge=low, le=high)]


def List(item: Any, limit: int) -> Any:  # noqa: N802
    return Annotated[list[item], Meta(max_length=limit)]


Text = Str(MAX_TEXT)
Id = Str(200)
Name = Str(256)
Label = Str(500)
Note = Str(4000)
PathText = Str(4096)
Time = Str(64)
Key = Str(256)
Wire = Str(4096)  # names and ids a server chose (tool call ids and names, finish reasons): its own bound
Free = dict[Key, Any]  # any JSON object; depth and numbers are bounded by the file-wide pass
VarName = Annotated[str, Meta(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")]
SessionId = Annotated[str, Meta(pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")]  # it names files
Hash = Annotated[str, Meta(pattern=r"^([0-9a-f]{64})?$")]
Role = Literal[ROLES]
Number = Annotated[float, Meta(ge=0, le=1e15)]


def conform(value: Any, shape: Any, where: str) -> None:
    """Check `value` against `shape`; raise ValueError that msgspec turns into a located error."""
    try:
        msgspec.convert(value, shape)
    except msgspec.ValidationError as exc:
        raise ValueError(f"{exc} - at `${where}`") from None


# -- shapes of wire objects (checked, kept as dicts) -------------------------------------------------------
class ImageUrl(Struct):
    url: Text = ""
    width: Int(1, 100_000) | None = None
    height: Int(1, 100_000) | None = None


class Part(Struct):
    type: Name
    text: Text = ""
    image_url: Text | ImageUrl | None = None
    width: Int(1, 100_000) | None = None
    height: Int(1, 100_000) | None = None
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


Tools = List(Free, MAX_TOOLS)


def check_tools(tools: list | None, where: str) -> None:
    if tools is not None:
        conform(tools, list[Tool], where)


# -- messages --------------------------------------------------------------------------------------------
class ProvenanceIn(Struct):
    source: Literal[SOURCES] | None = None
    trusted: bool | None = None
    label: Label = ""


class MessageIn(Struct):
    role: Role
    content: Text | List(Free, MAX_PARTS) | None = ""
    name: Name | None = None
    tool_calls: List(Free, MAX_TOOL_CALLS) | None = None
    tool_call_id: Wire | None = None
    reasoning_content: Text | None = None
    reasoning: Text | None = None
    thinking: Text | None = None
    provenance: ProvenanceIn | None = None
    pinned: bool = False
    id: Id = ""
    incomplete: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.content, list):
            conform(self.content, list[Part], ".content")
        if self.tool_calls is not None:
            conform(self.tool_calls, list[ToolCall], ".tool_calls")


# -- session settings ------------------------------------------------------------------------------------
class EndpointIn(Struct):
    base_url: Str(4096) = ""
    model: Str(1000) = ""


class TemplateIn(Struct):
    name: Name = "chatml"
    origin: Str(8192) = "builtin"  # "gguf:" or "file:" and a path
    text: Str(MAX_TEMPLATE) | None = None
    defaults: Annotated[dict[VarName, Str(100_000) | bool | None], Meta(max_length=100)] = {}

    def __post_init__(self) -> None:
        check_names(self.defaults, ".defaults")


class PolicyIn(Struct):
    name: Literal[POLICIES] = "keep-all"
    context_window: Int(1, 10 ** 8) | None = None
    max_tokens: Int(0, 10 ** 7) = 0
    keep_last: Int(1, 10 ** 6) = 4
    summary: Text | None = None
    summary_cost: Int(0, BIG) = 0
    summary_of: List(Id, MAX_MESSAGES) = []


def check_names(variables: dict, where: str) -> None:
    clash = sorted(RESERVED_VARIABLES & set(variables))
    if clash:
        raise ValueError(f"the name {clash[0]!r} is reserved by ctxpane - at `${where}`")


# -- request records -------------------------------------------------------------------------------------
class Usage(Struct):
    prompt_tokens: Int(0, BIG) | None = None
    completion_tokens: Int(0, BIG) | None = None
    total_tokens: Int(0, BIG) | None = None
    prompt_tokens_details: dict[Key, Int(0, BIG) | None] | None = None


class Timings(Struct):
    predicted_per_second: Number | None = None
    cache_n: Int(0, BIG) | None = None
    prompt_n: Int(0, BIG) | None = None  # read again by the cache model when the session is replayed
    predicted_n: Int(0, BIG) | None = None


MAX_GENERATED = 1_000_000  # generated tokens described by one reply


class Reply(Struct):
    content: Text | None = None
    reasoning: Text | None = None
    generated: List(Wire, MAX_GENERATED) | None = None  # each generated token's text, when the server said
    tool_calls: List(ToolCall, MAX_TOOL_CALLS) | None = None
    finish_reason: Wire | None = None
    usage: Usage | None = None
    timings: Timings | None = None
    model: Str(1000) | None = None
    incomplete: bool = False
    error: Str(100_000) | None = None


class Body(Struct):
    messages: List(MessageIn, MAX_MESSAGES) = []
    tools: Tools | None = None


class DroppedIn(Struct):
    message: Int(-1, MAX_MESSAGES)
    message_id: Id
    role: Name
    tokens: Int(0, BIG)
    policy: Name
    reason: Note
    since_request: Int(0, MAX_REQUESTS)


# -- what the server did with a request, and what it cost (tui/context/received.py, costs.py) ----------
class WindowIn(Struct):
    tokens: Int(1, 10 ** 8)
    source: Name = "default"
    detail: Note = ""


class FitIn(Struct):
    """The check made before sending: does the request fit the server's window."""

    fits: bool | None = None
    prompt_tokens: Int(0, BIG) = 0
    max_tokens: Int(0, BIG) = 0
    window: WindowIn | None = None
    over_by: Int(0, BIG) = 0
    reply_room: Int(0, BIG) | None = None
    consequence: Note = ""
    message: Note = ""


class AffectedIn(Struct):
    message_id: Id
    role: Name = ""
    tokens: Int(0, BIG) = 0
    lost: Int(0, BIG) = 0
    text_tokens: Int(0, BIG) = 0
    text_lost: Int(0, BIG) = 0


class ReceivedIn(Struct):
    """Sent against received, after the reply."""

    sent: Int(0, BIG)
    verdict: Literal["match", "dropped", "added", "refused", "unknown"]
    exact: bool = False
    received: Int(0, BIG) | None = None
    source: Name = ""
    difference: Int(-BIG, BIG) = 0
    where: Literal["front", "middle", "end"] | None = None
    where_basis: Note = ""
    who: Note = ""
    who_detail: Note = ""
    affected: List(AffectedIn, MAX_MESSAGES) = []
    window: WindowIn | None = None
    truncated_flag: bool | None = None
    reply_cut: bool = False
    shifted: bool = False
    observed_window: Int(1, 10 ** 8) | None = None
    notes: List(Note, 50) = []
    summary: Note = ""
    images_estimate: Int(0, BIG) = 0  # image tokens estimated (tui/context/image_tokens.py)
    images_reconciled: Int(-BIG, BIG) | None = None  # what the server's count leaves for the images


class PriceIn(Struct):
    model: Str(1000) = ""
    input: Number = 0
    cached_input: Number = 0
    cache_write: Number = 0
    output: Number = 0
    unit: Name = "USD per 1M tokens"
    source: Note = ""
    table_date: Time = ""
    origin: PathText = ""


Money = Number | None


class FiguresIn(Struct):
    """Tokens and amounts (dollars; null for a model without a price), of a request or of a running total."""

    input_tokens: Int(0, BIG) = 0
    cached_tokens: Int(0, BIG) = 0
    cache_write_tokens: Int(0, BIG) = 0
    output_tokens: Int(0, BIG) = 0
    lost_tokens: Int(0, BIG) = 0
    keep_all_tokens: Int(0, BIG) = 0
    paid: Money = None
    saved_by_cache: Money = None
    lost_to_cache_break: Money = None
    keep_all_paid: Money = None
    keep_all_cached_paid: Money = None


TOTAL = BIG * MAX_REQUESTS  # a running total: up to MAX_REQUESTS figures of up to BIG each
Sum = Annotated[float, Meta(ge=0, le=1e15 * MAX_REQUESTS)] | None


class TotalsIn(FiguresIn):
    requests: Int(0, MAX_REQUESTS) = 0
    priced_requests: Int(0, MAX_REQUESTS) = 0
    input_tokens: Int(0, TOTAL) = 0
    cached_tokens: Int(0, TOTAL) = 0
    cache_write_tokens: Int(0, TOTAL) = 0
    output_tokens: Int(0, TOTAL) = 0
    lost_tokens: Int(0, TOTAL) = 0
    keep_all_tokens: Int(0, TOTAL) = 0
    paid: Sum = None
    saved_by_cache: Sum = None
    lost_to_cache_break: Sum = None
    keep_all_paid: Sum = None
    keep_all_cached_paid: Sum = None


class CostIn(FiguresIn):
    """One request's cost, and the session's running totals up to it (`cumulative`)."""

    model: Str(1000) = ""
    priced: bool = False
    price: PriceIn | None = None
    cached_from: Literal["reported", "predicted"] = "reported"
    cumulative: TotalsIn | None = None


class RequestIn(Struct):
    number: Int(1, MAX_REQUESTS)
    time: Time
    body: Free
    reply: Free = {}
    usage: Free | None = None
    cached_reported: Int(0, BIG) | None = None
    timings: Free | None = None
    document_hash: Hash = ""
    document_tokens: Int(0, BIG) = 0
    tokens_exact: bool = False
    dropped: List(DroppedIn, MAX_MESSAGES) = []
    predicted_cached: Int(0, BIG) | None = None
    cache_cause: Note = ""
    cache_class: Name = ""
    cache_source: Int(1, MAX_REQUESTS) | None = None
    cache_place: Name = ""
    keep_all_tokens: Int(0, BIG) = 0
    template: Name = ""
    tokenizer: PathText = ""
    message_count: Int(0, MAX_MESSAGES) = 0
    message_ids: List(Id, MAX_MESSAGES) = []
    fit: FitIn | None = None
    received: ReceivedIn | None = None
    cost: CostIn | None = None

    def __post_init__(self) -> None:
        conform(self.body, Body, ".body")
        check_tools(self.body.get("tools"), ".body.tools")
        conform(self.reply, Reply, ".reply")
        conform(self.usage, Usage | None, ".usage")
        conform(self.timings, Timings | None, ".timings")


# -- the file --------------------------------------------------------------------------------------------
class Header(Struct):
    """Read first, so that any other JSON file is told it is not a session before any field is judged."""

    format: Any = None
    version: Any = None


class SessionIn(Struct):
    format: Name
    version: Int(1, 1000)
    messages: List(MessageIn, MAX_MESSAGES)
    id: SessionId | None = None
    title: Str(1000) = "Untitled"
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
    requests: List(RequestIn, MAX_REQUESTS) = []
    next_id: Int(0, MAX_NEXT_ID) | None = None  # absent in older files

    def __post_init__(self) -> None:
        check_names(self.variables, ".variables")
        check_tools(self.tools, ".tools")
