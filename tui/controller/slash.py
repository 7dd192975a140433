"""Slash commands typed in the composer (`/model NAME`, `/retry`, …): parsed here, run by the controller or, for
those that open a dialog or a screen, named back to the app. A leading `//` sends a line that starts with `/`.

A line that starts with `/` and names no command is refused, never sent: `/cler` was meant for ctxpane, not for
the model; a path (`/etc/hosts says…`) is sent with `//`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, Callable, Coroutine, TypeVarTuple

from tui.context.untrusted.visible import visible
from tui.controller.compute import Skipped
from tui.controller.events import Severity

if TYPE_CHECKING:
    from tui.context.messages import Message
    from tui.controller.parts import Parts
    from tui.controller.workbench import Workbench

Arguments = TypeVarTuple("Arguments")

MAX_NAME = 1000  # a model or template name: what a session file keeps of it


class Slash(Enum):
    MODEL = "model"
    TEMPLATE = "template"
    SYSTEM = "system"
    CLEAR = "clear"
    SUMMARISE = "summarise"
    CONTEXT = "context"
    EXPORT = "export"
    RETRY = "retry"
    HELP = "help"


@dataclass(frozen=True)
class SlashCommand:
    kind: Slash
    argument: str  # what it takes, for the completion's hint ("" for none)
    help: str


COMMANDS = (
    SlashCommand(Slash.MODEL, "[name]", "use this model (without a name: pick from the server's list)"),
    SlashCommand(Slash.TEMPLATE, "[name]", "render with this chat template (without a name: pick one)"),
    SlashCommand(Slash.SYSTEM, "[text]", "set the system prompt (without text: edit it)"),
    SlashCommand(Slash.CLEAR, "", "start a new, empty session (this one is saved)"),
    SlashCommand(Slash.SUMMARISE, "", "summarise the turns the window drops, now (and from now on)"),
    SlashCommand(Slash.CONTEXT, "", "what fills the window: system, tools, messages, reserved, free"),
    SlashCommand(Slash.EXPORT, "", "write the transcript as Markdown beside the session"),
    SlashCommand(Slash.RETRY, "", "ask the last question again (the old reply is kept as a branch)"),
    SlashCommand(Slash.HELP, "", "list the slash commands"),
)
BY_NAME = {command.kind.value: command for command in COMMANDS}
ALIASES = {"summarize": Slash.SUMMARISE, "compact": Slash.SUMMARISE, "new": Slash.CLEAR}


@dataclass(frozen=True)
class Parsed:
    """A composer line read as a command: `kind` with its `argument`, or `unknown` (the word that named none)."""

    kind: Slash | None = None
    argument: str = ""
    unknown: str = ""


def literal(text: str) -> str | None:
    """The text to send for a line that escapes its slash (`//…` sends `/…`); None for any other line."""
    return text[1:] if text.startswith("//") else None


def message_of(text: str) -> str | None:
    """What the composer's line sends: a `//` line with one slash, a message as it is; None for a /command."""
    escaped = literal(text)
    if escaped is not None:
        return escaped
    return text if parse(text) is None else None


def draft_of(text: str) -> str:
    """What the pane shows as the draft: what the line would send (nothing for a /command)."""
    return message_of(text) or ""


def parse(text: str) -> Parsed | None:
    """None: not a command (send it as it is; a `//` line sends `literal(text)`)."""
    if not text.startswith("/") or text.startswith("//"):
        return None
    head, _, tail = text[1:].partition("\n")  # /system takes lines after its own
    word, _, rest = head.partition(" ")
    argument = rest + ("\n" + tail if tail else "")
    name = word.strip().lower()
    kind = ALIASES.get(name) or (BY_NAME[name].kind if name in BY_NAME else None)
    if kind is None:
        return Parsed(unknown=word[:40])
    return Parsed(kind, argument.strip())


def completions(text: str) -> list[SlashCommand]:
    """The commands a partly typed first word could be (the composer's hint, and what Tab completes)."""
    if not text.startswith("/") or text.startswith("//") or " " in text or "\n" in text:
        return []
    typed = text[1:].lower()
    return [command for command in COMMANDS if command.kind.value.startswith(typed)]


def completed(text: str) -> str | None:
    """The line with its command's name completed (the longest part all candidates share), or None."""
    found = completions(text)
    if not found:
        return None
    names = [command.kind.value for command in found]
    shared = names[0]
    for name in names[1:]:
        while not name.startswith(shared):
            shared = shared[:-1]
    whole = len(found) == 1
    return "/" + shared + (" " if whole and found[0].argument else "") if len(shared) >= len(text) - 1 else None


def hint(text: str) -> str:
    """One line for under the composer: the commands that match, each with what it does."""
    found = completions(text)
    if not found:
        return ""
    if len(found) == 1:
        command = found[0]
        return f"/{command.kind.value} {command.argument}".rstrip() + f" — {command.help} (Tab completes)"
    return "  ".join(f"/{command.kind.value}" for command in found) + "   (Tab completes, // sends a /)"


def help_lines() -> list[str]:
    return [f"/{c.kind.value} {c.argument}".rstrip() + f" — {c.help}" for c in COMMANDS] + \
        ["//text — send a message that starts with /"]


class Outcome(Enum):
    DONE = "done"  # run: the composer lets the line go
    REFUSED = "refused"  # said why: the line stays in the composer, to be corrected
    FOR_APP = "for-app"  # a picker, an editor or a screen: the app opens it


@dataclass(frozen=True)
class SlashIntents:
    """The intents a command line may run: the same the keys and the palette call, each by name."""

    answering: Callable[[], bool]  # a reply is on its way: nothing that changes the session runs
    set_model: Callable[[str], None]
    template_choices: Callable[[], list[tuple[str, str]]]
    set_template: Callable[[str], None]
    set_policy: Callable[[str], None]
    set_system_prompt: Callable[[str], None]
    new_session: Callable[[], None]
    export_markdown: Callable[[], None]
    resend_from: Callable[[int, Message], None]
    summary_call: Callable[[Workbench, list[Message]], Coroutine[Any, Any, None]]


class SlashRunner:
    """The commands that need no dialog, run through their intents; `run` says which are left to the app."""

    def __init__(self, parts: Parts, intents: SlashIntents) -> None:
        self.parts, self.intents = parts, intents

    def run(self, parsed: Parsed) -> Outcome:
        """Run `parsed`, or say why not (in one line), or leave it to the app."""
        parts, intents, argument = self.parts, self.intents, parsed.argument
        if parsed.kind is None:
            parts.notify(f"no command /{visible(parsed.unknown)}: /help lists them; // sends a line starting with /",
                         severity=Severity.ERROR)
            return Outcome.REFUSED
        if parsed.kind in (Slash.MODEL, Slash.TEMPLATE, Slash.SYSTEM) and not argument.strip():
            return Outcome.FOR_APP
        runs = {Slash.MODEL: lambda: self.model(argument), Slash.TEMPLATE: lambda: self.template(argument),
                Slash.SYSTEM: lambda: self.changes() and _done(intents.set_system_prompt, argument),
                Slash.CLEAR: lambda: self.changes() and _done(intents.new_session),
                Slash.SUMMARISE: self.summarise, Slash.EXPORT: lambda: _done(intents.export_markdown),
                Slash.RETRY: self.retry}
        run = runs.get(parsed.kind)
        if run is None:
            return Outcome.FOR_APP
        return Outcome.DONE if run() else Outcome.REFUSED

    def changes(self) -> bool:
        """Whether the session may change now (not while a reply arrives: said, as the keys say it)."""
        return not self.intents.answering()

    def model(self, name: str) -> bool:
        name = name.strip()
        if len(name) > MAX_NAME or "\n" in name or visible(name) != name:
            self.parts.notify(f"not a model name: one line of at most {MAX_NAME:,} printable characters",
                            severity=Severity.ERROR)
            return False
        return self.changes() and _done(self.intents.set_model, name)

    def template(self, name: str) -> bool:
        name = name.strip()
        names = [choice for choice, _label in self.intents.template_choices()]
        if name not in names:
            self.parts.notify(f"no template {visible(name[:80])}: F3 lists them ({', '.join(names[:6])}, …)",
                            severity=Severity.ERROR)
            return False
        return self.changes() and _done(self.intents.set_template, name)

    def retry(self) -> bool:
        messages = self.parts.wb.session.messages
        last = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].role == "user"), None)
        if last is None:
            self.parts.notify("nothing to retry: no question yet", severity=Severity.WARNING)
            return False
        if self.parts.client is None:
            self.parts.notify("offline: start with --base-url URL to send", severity=Severity.WARNING)
            return False
        if not self.changes():
            return False
        self.intents.resend_from(last, messages[last])
        return True

    def summarise(self) -> bool:
        parts = self.parts
        if not self.changes():
            return False
        if parts.wb.policy.name != "summarise":
            self.intents.set_policy("summarise")
        if parts.client is None:
            parts.notify("the policy is summarise now; offline, the summary is made by a model call once connected",
                       severity=Severity.WARNING)
            return True
        parts.runtime.spawn(self._summarise_now, "summary")
        return True

    async def _summarise_now(self) -> None:
        parts, wb = self.parts, self.parts.wb
        view = await parts.worker.run(lambda: wb.compute(with_draft=False))
        if isinstance(view, Skipped):  # the app is closing
            return
        dropped = wb.summary_needed(view)
        if not dropped:
            parts.notify("nothing to summarise now: every turn fits the window; turns it drops later are "
                       "summarised as they go")
            return
        await self.intents.summary_call(wb, dropped)
        if parts.wb is wb:
            parts.changed()


def _done(action: Callable[[*Arguments], None], *arguments: *Arguments) -> bool:
    action(*arguments)
    return True
