"""Review: the isolated reviewer's own request for each risky tool call, newest first: the verdict, the
document it renders to (as the server sees it, with the conversation's template) and the body as sent."""

from __future__ import annotations

import json

from rich.console import Group
from rich.text import Text
from textual.widgets import Static

from tui.app.shown import shown, shown_line, shown_parts
from tui.controller.tool_calls import ReviewState

DOCUMENT_SHOWN = 20_000  # characters of the newest review's document; older reviews show their verdict only


class ReviewView(Static):
    DEFAULT_CSS = "ReviewView { padding: 0 1; }"

    def show(self, reviews: tuple) -> None:
        if not reviews:
            self.update(Text("no review yet: a call to a tool marked risky (or to one no tool file defines) is "
                             "reviewed here, by a separate model call with no tools, before it may run", style="dim"))
            return
        newest, *older = reversed(reviews)
        parts = self._review(newest, whole=True)
        for review in older:
            parts += [Text(""), *self._review(review, whole=False)]
        self.update(Group(*parts))

    @staticmethod
    def _review(review, whole: bool) -> list:
        call, request = review.call, review.request
        tone = "green" if review.allows else "yellow" if review.state is ReviewState.REVIEWING else "red"
        lines = [shown_parts((f"review of {call.name or 'unnamed'}", "bold"), f" (call {call.id}) by {review.reviewer}"),
                 shown_line(f"verdict: {review.line}", tone)]
        rationale = review.verdict.rationale if review.verdict else review.reply
        if rationale:
            lines.append(shown(rationale, limit=2000))
        if request is None or not whole:
            return lines
        counted = "exact" if request.exact else "estimated"
        lines += [shown_line(f"its own request ({request.api} API, model {request.model}): {request.tokens} tokens "
                             f"({counted}), none of the chat's tools, the verdict's schema asked for; the transcript, "
                             "the tool and the call fenced as data", "dim"),
                  Text("── the document it renders to ──", style="bold"),
                  shown(request.document, limit=DOCUMENT_SHOWN),
                  Text("── the body as sent ──", style="bold"),
                  shown(json.dumps(request.body, ensure_ascii=False, indent=2), limit=DOCUMENT_SHOWN)]
        return lines
