"""Which tokenizer counts: loading one off the loop, the server's coming and going.

Until the first tokenizer load has ended (loaded or failed), a session just opened waits for it before
its cache boundary is read, so the last stored request is rendered once, with the right tokenizer.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from tui.context.untrusted.visible import visible
from tui.context.tokens.counting import SegmentCache
from tui.context.tokens.tokenizers import Tokenizer, TokenizerNotFound, get_tokenizer
from tui.controller.events import Severity, Tone

if TYPE_CHECKING:
    from tui.controller.parts import Parts


class Tokenizing:
    def __init__(self, parts: "Parts") -> None:
        self.parts = parts
        self.settled = False  # the first tokenizer load has ended (loaded or failed)
        self._chosen = 0  # bumped by every choice of a tokenizer: a load that ends after a newer choice is dropped

    def load(self, name: str | None = None) -> None:
        """Load a tokenizer off the loop: `name`, else --tokenizer, else the session's (if shipped) or the template's."""
        from tui.sessions.replay import offline_tokenizer_name
        parts = self.parts
        # A tokenizer named in a session file is a shipped one or none: a path there is never opened.
        spec = name or parts.settings.tokenizer or offline_tokenizer_name(parts.wb.session.tokenizer, parts.wb.template)
        self._chosen += 1
        chosen = self._chosen
        parts.runtime.spawn(lambda: self._load(spec, chosen, picked=name is not None), "tokenizer")

    async def _load(self, spec: str, chosen: int, picked: bool = False) -> None:
        try:
            tokenizer = await asyncio.to_thread(get_tokenizer, spec)
        except TokenizerNotFound as exc:
            self.parts.notify(visible(str(exc)), severity=Severity.ERROR)
            if chosen == self._chosen:
                self._failed()
            return
        if chosen == self._chosen:  # else one chosen since (the server's own, at connect) stands
            before = self.parts.wb.tokenizer, self.parts.wb.exact
            self.use(tokenizer, None)
            if picked:  # the user's own switch: one change in the history, undone like any other
                from tui.controller.history import Operation, OpKind
                self.parts.history.add(Operation(OpKind.TOKENIZER, f"tokenizer {visible(tokenizer.name)[:80]}",
                                               before=before, after=(self.parts.wb.tokenizer, self.parts.wb.exact)))
                self.say_how_counting_goes()

    def say_how_counting_goes(self) -> None:
        """The status line said how the connection counted; after a pick it says how counting goes now,
        so it never claims "exact" beside a pane that says estimate."""
        from tui.context.assemble import is_exact
        wb = self.parts.wb
        exact = is_exact(wb.template, wb.tokenizer, wb.exact)
        self.parts.status(f"counting {visible(wb.template.name)} with {visible(wb.tokenizer.name)}: " +
                        ("exact" if exact else "estimate (not the model's own tokenizer)"),
                        Tone.GOOD if exact else Tone.CAUTION)

    def _failed(self) -> None:
        """No tokenizer: the estimate stays, and the cache boundary is read with it."""
        self.settled = True
        if self.parts.wb.tokenizer_pending:
            self.parts.wb.tokenizer_pending = False
            self.parts.changed(save=False)

    def use(self, tokenizer: Tokenizer, exact: bool | None) -> None:
        if self.parts.link.unseen:  # a gateway hides the server (or refused us): no count is its own
            exact = False
        self._chosen += 1
        self.settled = True
        self.parts.wb.set_tokenizer(tokenizer, exact)
        self.parts.changed(save=False)

    def source_changed(self, falling_back: bool) -> None:
        """On the loop: the server's tokenizer went away or came back."""
        parts = self.parts
        parts.wb.cache = SegmentCache()  # counts cached so far came from the other tokenizer
        if falling_back:
            parts.status("the server's tokenizer does not answer: counting locally (estimate) until it is back",
                       Tone.CAUTION)
        else:
            parts.status("the server's tokenizer is back: counts are exact again", Tone.GOOD)
        parts.changed(save=False)

    def retry_server(self) -> None:
        """On a timer: while counting locally, ask the server again once its back-off has passed."""
        if getattr(self.parts.wb.tokenizer, "retry_due", lambda: False)():
            self.parts.changed(save=False)
