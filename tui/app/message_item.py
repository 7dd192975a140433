"""One message in the chat: its role and provenance, its text (never markup), reasoning and tool calls folded."""

from __future__ import annotations

import json

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Collapsible, Static

from tui.context.messages import Message
from tui.context.safety import visible

from .shown import one_line, shown


def header_text(message: Message, index: int, dropped: bool) -> Text:
    prov = message.provenance
    text = Text(one_line(message.role, 20), style="bold")
    text.append(f" #{index}", style="dim")
    if prov.source not in ("user", "system_prompt", "model") or not prov.trusted:
        text.append(f"  {one_line(prov.label or prov.source, 80)}", style="italic")
    if not prov.trusted:
        text.append("  untrusted", style="bold yellow")
    if message.pinned:
        text.append("  📌 pinned", style="bold")
    if dropped:
        text.append("  ✂ dropped from the request", style="strike dim")
    if message.incomplete:
        text.append("  ⚠ incomplete", style="bold yellow")
    return text


def tool_calls_text(calls: list[dict]) -> Text:
    lines = []
    for call in calls:
        function = call.get("function", {})
        arguments = function.get("arguments", "")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False)
        lines.append(f"{function.get('name', '?')}({arguments})")
    return shown("\n".join(lines))


class MessageItem(Vertical, can_focus=True):
    DEFAULT_CSS = """
    MessageItem { height: auto; padding: 0 1; margin: 0 0 1 0; border-left: thick $panel; }
    MessageItem:focus { border-left: thick $accent; background: $boost; }
    MessageItem.role-user { border-left: thick $success; }
    MessageItem.role-assistant { border-left: thick $primary; }
    MessageItem.role-system, MessageItem.role-developer { border-left: thick $secondary; }
    MessageItem.role-tool, MessageItem.untrusted { border-left: thick $warning; }
    MessageItem.dropped { opacity: 60%; }
    MessageItem .body { height: auto; }
    MessageItem Collapsible { padding: 0; border: none; }
    """

    def __init__(self, message: Message, index: int, dropped: bool = False, note: str = "") -> None:
        super().__init__(classes=f"role-{message.role}" + ("" if message.provenance.trusted else " untrusted")
                         + (" dropped" if dropped else ""))
        self.message, self.index, self.dropped, self.note = message, index, dropped, note

    @property
    def signature(self) -> tuple:
        """What this item shows: when it changes, the item is drawn again."""
        m = self.message
        return (id(m), m.role, m.text(), m.reasoning_content, str(m.tool_calls), m.pinned, m.incomplete,
                m.provenance.trusted, self.index, self.dropped, self.note)

    def compose(self) -> ComposeResult:
        yield Static(header_text(self.message, self.index, self.dropped), classes="head")
        if self.message.reasoning_content:  # folded parts exist only where there is something to fold
            yield self._reasoning(self.message.reasoning_content)
        body = shown(self.message.text())
        if self.note:
            body.append("\n" + one_line(self.note, 2000), style="bold yellow")
        yield Static(body, classes="body")
        if self.message.tool_calls:
            yield self._calls(self.message.tool_calls)

    @staticmethod
    def _reasoning(text: str) -> Collapsible:
        return Collapsible(Static(shown(text), classes="reasoning-body"), title="reasoning",
                           collapsed=True, classes="reasoning")

    @staticmethod
    def _calls(calls: list[dict]) -> Collapsible:
        return Collapsible(Static(tool_calls_text(calls), classes="calls-body"), title=f"tool calls ({len(calls)})",
                           collapsed=True, classes="calls")

    def set_reply(self, content: str, reasoning: str, calls: list[dict], note: str = "") -> None:
        """Update while a reply streams in (shown as text, never as markup or escape sequences)."""
        body = shown(content)
        if note:
            body.append("\n" + one_line(note, 2000), style="bold yellow")
        body_widget = self.query_one(".body", Static)
        body_widget.update(body)
        if reasoning:
            folded = self.query(".reasoning-body")
            if folded:
                folded.first(Static).update(shown(reasoning))
            else:
                self.mount(self._reasoning(reasoning), before=body_widget)
        if calls:
            boxes = self.query(".calls")
            if boxes:
                boxes.first(Collapsible).title = f"tool calls ({len(calls)})"
                self.query_one(".calls-body", Static).update(tool_calls_text(calls))
            else:
                self.mount(self._calls(calls), after=body_widget)
