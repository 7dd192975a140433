"""One reply from the server, as it streams: progress for the view, checkpoints for the file, and how it ended.

It holds no state of the session: the controller records the reply and says what it means.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any, Callable

from tui.client.errors import ClientError
from tui.client.reply import Reply, ReplyAssembler
from tui.context.untrusted.visible import visible
from tui.controller.events import ReplyGrew

if TYPE_CHECKING:
    from tui.client.http import OpenAIClient

SAVE_EVERY = 1.0  # a kill mid-reply loses at most this much
STOPPED = "■ stopped: the reply is kept, marked incomplete"


class Deltas:
    """What of the reply was not told yet: each chunk becomes a ReplyGrew with the offsets where it starts."""

    def __init__(self) -> None:
        self.content_told = self.reasoning_told = 0

    def grew(self, reply: Reply) -> ReplyGrew:
        event = ReplyGrew(reply.content, self.content_told, reply.reasoning, self.reasoning_told,
                          tuple(reply.tool_calls or ()))
        self.content_told, self.reasoning_told = len(reply.content), len(reply.reasoning)
        return event


async def stream_reply(client: OpenAIClient, body: dict[str, Any], on_progress: Callable[[ReplyGrew], None],
                       on_checkpoint: Callable[[Reply], None], on_status: Callable[[str], None]) -> tuple[Reply, str]:
    """Send `body` and follow the reply. Returns the reply (incomplete if cut short) and a note ('' if whole).

    A cancel (the user stopped it) or a failure ends it early: what arrived is kept, and said so.
    """
    assembler, deltas = ReplyAssembler(), Deltas()
    last_save, note = 0.0, ""  # the first piece of a reply is saved at once
    started = time.monotonic()

    def on_delta(_text: str, progress: ReplyAssembler) -> None:
        nonlocal last_save
        # Every chunk goes to the view at once: the chat view wraps only the reply's last rows, and Textual
        # draws at most one frame per refresh interval however many chunks arrive (none waits for the next).
        now = time.monotonic()
        if progress.reply.first_token_ms is None and progress.size:  # a role-only first chunk is no token yet
            progress.reply.first_token_ms = round((now - started) * 1000)
        on_progress(deltas.grew(progress.reply))
        if now - last_save > SAVE_EVERY:
            on_checkpoint(progress.reply)
            last_save = now

    try:
        await client.chat(body, assembler, on_delta, lambda text: on_status(visible(text)))
    except asyncio.CancelledError:
        note = STOPPED
        assembler.reply.incomplete = True
    except ClientError as exc:
        note = f"✗ {visible(str(exc))}"
        assembler.reply.incomplete = True
        assembler.reply.error = str(exc)
        assembler.reply.failure = exc  # a refusal for size says how many tokens the server counted
    assembler.reply.elapsed_ms = round((time.monotonic() - started) * 1000)
    return assembler.reply, note
