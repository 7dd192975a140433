"""Search the transcript: `/` or Ctrl+F opens this input under the chat; Enter finds, n/N move between matches.

The search runs in a worker thread over the messages as they were when it started (a 10,000-message
session does not stall the loop); the selection moves to the matching message and every occurrence on
screen is highlighted by the chat view. Esc closes the search and clears the highlight.
"""

from __future__ import annotations

from textual.binding import Binding

from tui.app.safe_inputs import SafeInput

MAX_QUERY = 200


def find_matches(messages, query: str) -> list[int]:
    """Indexes of the messages whose text (or reasoning) contains `query`, ignoring case."""
    needle = query.lower()
    if not needle:
        return []
    found = []
    for index, message in enumerate(messages):
        if needle in message.text().lower() or needle in (message.reasoning_content or "").lower():
            found.append(index)
    return found


class ChatSearch(SafeInput):
    DEFAULT_CSS = "ChatSearch { dock: bottom; height: 3; }"
    BINDINGS = [Binding("escape", "close", "Close search")]

    def __init__(self, view, **kwargs) -> None:
        super().__init__(placeholder="Search the transcript (Enter: find; then n / N; Esc: close)",
                         max_length=MAX_QUERY, submit_now=self.find, **kwargs)
        self.view = view

    def find(self) -> None:
        """Enter: search in a worker; the transcript has the focus at once, so the n or N typed behind Enter is
        the transcript's, not more of the query."""
        query, messages = self.value, list(self.view.searchable_messages())
        if not query:
            return
        self.screen.set_focus(self.view)
        self.run_worker(lambda: self._search(messages, query), thread=True, exclusive=True, group="chat-search")

    def _search(self, messages: list, query: str) -> None:
        matches = find_matches(messages, query)
        self.app.call_from_thread(self.view.show_matches, query, matches)

    def action_close(self) -> None:
        self.view.end_search()


class Searching:
    """What the chat view does for a search (a mixin: ChatView keeps its drawing, this its matches)."""

    search_query: str = ""
    matches: list[int] = []

    def action_search(self) -> None:
        existing = list(self.screen.query(ChatSearch))
        search = existing[0] if existing else ChatSearch(self)
        if not existing:
            self.parent.mount(search, after=self)
        search.value = search.value or self.search_query
        # Focused now, not after the App's next message as focus() does: the keys typed behind / go to it.
        self.screen.set_focus(search)

    def searchable_messages(self) -> list:
        return self._messages

    def show_matches(self, query: str, matches: list[int]) -> None:
        """A search ended: highlight `query`, select the first match after the selection (or the first)."""
        self.search_query, self.matches = query, matches
        self.painter.clear()
        self.refresh()
        self.focus()
        if not matches:
            self._say(f"search: no message contains {query!r}")
            return
        start = self.selected if self.selected is not None else -1
        self._jump(next((m for m in matches if m > start), matches[0]))

    def action_next_match(self, direction: int) -> None:
        if not self.matches:
            self._say("no search yet: / or Ctrl+F searches the transcript")
            return
        current = self.selected if self.selected is not None else -1
        if direction > 0:
            target = next((m for m in self.matches if m > current), self.matches[0])
        else:
            target = next((m for m in reversed(self.matches) if m < current), self.matches[-1])
        self._jump(target)

    def _jump(self, at: int) -> None:
        at = min(at, len(self._messages) - 1)
        self.select(at)
        number = self.matches.index(at) + 1 if at in self.matches else 0
        self._say(f"search {self.search_query!r}: message #{at}, match {number} of {len(self.matches)} "
                  "(n next, N previous, / new search)")

    def end_search(self) -> None:
        self.search_query, self.matches = "", []
        self.painter.clear()
        self.refresh()
        for search in self.screen.query(ChatSearch):
            search.remove()
        self.focus()
        self._say("")

    def _say(self, text: str) -> None:
        panel = self.parent
        if hasattr(panel, "set_status"):
            panel.set_status(text)
