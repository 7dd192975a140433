"""The conversation computed for the pane: in the worker thread, once per generation, a stale result
dropped; the draft spliced in place between keystrokes where the template allows it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tui.context.errors import TemplateRenderError
from tui.context.request import RequestView

from tui.controller.compute import Skipped
from tui.controller.events import Severity
from tui.controller.parts import Parts
from tui.controller.showing import Showing

if TYPE_CHECKING:
    from tui.context.templates.library import ChatTemplate
    from tui.controller.runtime import Handle

DRAFT_SETTLE = 0.4  # after a keystroke the pane was updated in place: the full computation waits this long
LARGE_DRAFT = 1 << 15  # characters: past this, typing never waits for the pane
LARGE_DRAFT_SETTLE = 0.1  # a big draft is computed (in the worker) once typing pauses this long
FULL_SETTLE = 2.0  # after a refreshed view, typing paused this long: the full computation, for what a refresh
# cannot see (a template whose text depends on the draft's, such as one that appends /nothink unless it is there)
STALE_RETRY = 0.05  # seconds: a change that asked for no computation of its own is computed this soon


class ViewUpdates:
    def __init__(self, parts: Parts, showing: Showing) -> None:
        self.parts, self.showing = parts, showing
        self._timer: Handle | None = None
        self._computing_for = -1  # the generation a computation is on its way for
        self._template_said: str | None = None  # the template's refusal last said (said again only once it changes)
        # the template the worker has probed for splicing (tui/context/tokens/draft_splice.py)
        self._probed: ChatTemplate | None = None
        self._after_splice = False  # the computation due may refresh the spliced view (compute's after_splice)
        self._shown_for = -1  # the generation whose view wb.view is: a key splices only a view of the state as it is

    def compute(self, delay: float = 0.0, after_splice: bool = False) -> None:
        """Compute the view of the current generation in the worker, now or after `delay` seconds. `after_splice`:
        nothing changed since a keystroke's splice but the draft, so the spliced view may only be refreshed
        (read off its document, not rendered again: a keystroke at any size never costs a whole render)."""
        self._after_splice = after_splice
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._computing_for = self.parts.generation
        if delay:
            self._timer = self.parts.runtime.later(delay, self._start)
        else:
            self._start()

    def _start(self) -> None:
        self._timer = None
        generation, after_splice = self.parts.generation, self._after_splice
        self.parts.runtime.spawn(lambda: self._compute_view(generation, after_splice), "compute")

    async def _compute_view(self, generation: int, after_splice: bool = False) -> None:
        parts = self.parts
        wb = parts.wb

        refreshed = False

        def job() -> RequestView:
            nonlocal refreshed
            view = wb.refreshed() if after_splice else None
            refreshed = view is not None
            view = view or wb.compute()
            wb.template.copies_text_verbatim()  # probed here: a keystroke never renders a template on the loop
            return view
        try:
            view = await parts.worker.run(job, lambda: generation == parts.generation)
        except TemplateRenderError as exc:  # the template refuses this conversation: say so, keep going
            if generation == parts.generation:
                self._template_failed(exc)
            return
        if not isinstance(view, Skipped):
            self._probed = wb.template
        if self.apply_view(view, generation) and refreshed:
            self.compute(FULL_SETTLE)  # (a key before then cancels it: it splices, and the settle starts again)

    def apply_view(self, view: RequestView | Skipped, generation: int) -> bool:
        """Take a computed view if nothing changed since it was asked for; a stale one is dropped."""
        parts, showing = self.parts, self.showing
        if isinstance(view, Skipped) or generation != parts.generation:
            if self._computing_for != parts.generation and self._timer is None:
                self.compute(STALE_RETRY)
            return False
        dropped_before = showing.dropped()
        parts.wb.view = view
        self._shown_for = generation
        self._template_said = None  # the template takes the conversation again: a later refusal is said
        figures = showing.chat_figures()  # the new view's counts: shown again only if a header changes
        if showing.dropped() != dropped_before or figures != showing.figures_shown:
            showing.show_chat(figures)
        showing.show_pane()
        return True

    def _template_failed(self, exc: TemplateRenderError) -> None:
        said = f"template {self.parts.wb.template.name} rejects the conversation: {exc}"
        if said != self._template_said:  # said once, not again on every keystroke while it keeps refusing
            self._template_said = said
            self.parts.notify(said, severity=Severity.ERROR, timeout=10)
        self.parts.wb.view = None
        self.showing.show_chat()

    def set_draft(self, text: str) -> None:
        """What the composer holds. The pane follows at once when the view can be spliced; else it is computed."""
        parts = self.parts
        wb = parts.wb
        if text == wb.draft:
            return
        current = self._shown_for == parts.generation  # wb.view is the state as it is (no change still computing)
        parts.generation += 1
        if len(text) > LARGE_DRAFT or len(wb.draft) > LARGE_DRAFT:
            # The key is echoed now; the pane follows once typing pauses, computed in the worker, where
            # only the changed piece of the draft is encoded again (SegmentCache).
            wb.draft = text
            self.compute(LARGE_DRAFT_SETTLE)
        elif self._probed is not wb.template:  # not known yet whether it may be spliced: compute in full
            wb.draft = text
            self.compute()
        elif not current:  # a change's computation is on its way: splicing the view before it would outdo it
            wb.draft = text
            self.compute()
        elif wb.set_draft(text):
            self._shown_for = parts.generation
            self.showing.show_pane()
            self.compute(DRAFT_SETTLE, after_splice=True)  # what the splice left stale: settled after a pause
        else:
            self.compute()
