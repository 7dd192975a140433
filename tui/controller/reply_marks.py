"""How a reply ended, said under it: an empty reply, or one cut by `max_tokens` (finish_reason "length").

The reply's finish_reason is kept in the session's request record; the mark is a note on the transcript
(an empty reply adds no message, so its mark goes under the message it answered).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tui.controller.events import Tone

if TYPE_CHECKING:
    from tui.client.reply import Reply

    from tui.controller.parts import Parts

EMPTY = "(empty reply: the model sent no text)"
CUT = "✂ cut at max tokens (finish_reason: length)"


def reply_mark(reply: "Reply | None") -> str:
    """The mark for a reply that ended normally; '' when there is nothing to say."""
    if reply is None or reply.incomplete:
        return ""  # a stopped or failed reply has its own note
    if reply.finish_reason == "length":
        return CUT
    if not reply.content and not reply.tool_calls:
        return EMPTY
    return ""


def mark_last_message(parts: "Parts", mark: str) -> None:
    """Put `mark` under the session's last message (the reply, or what an empty reply answered)."""
    messages = parts.wb.session.messages
    if not mark or not messages:
        return
    parts.notes[messages[-1].id] = mark
    parts.status(mark, Tone.CAUTION)
    parts.changed(save=False)
