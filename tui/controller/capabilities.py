"""Before a message is sent: what the server cannot take, said once, with what to do (issue 19).

An image to a server whose /props says it has no vision, or a request over the server's window: the message
stays in the composer with a warning; Enter again sends it as it is, F9 (over the window) drops the oldest
turns to fit and sends. Nothing is refused for good: the user may want to see what the server does with it.
"""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Callable

from tui.controller.receiving import fit_now, server_window
from tui.controller.events import Severity

if TYPE_CHECKING:
    from tui.controller.parts import Parts


class Concern(Enum):
    NO_VISION = "no-vision"
    OVER_WINDOW = "over-window"


class Capabilities:
    def __init__(self, parts: "Parts", submit: Callable[[str], bool]) -> None:
        self.parts, self.submit = parts, submit  # submit: send a message that was checked already
        self._warned: tuple[str, Concern] | None = None  # said for this text: Enter again sends it

    def concern(self, text: str) -> tuple[Concern, str] | None:
        """What the server cannot take in the request `text` would make, as computed for the pane."""
        parts = self.parts
        view, connection = parts.wb.view, parts.link.connection
        if view is None or connection is None or parts.wb.draft != text:  # no view of this message: nothing known
            return None
        if connection.info.vision is False and view.hidden.images:
            count = len(view.hidden.images)
            return Concern.NO_VISION, (f"the server says its model takes no images (/props modalities), and this "
                                       f"request holds {count}: it may refuse it or ignore them. Enter sends "
                                       "anyway")
        fit = fit_now(parts, view, parts.wb.request_body(view))
        if fit is not None and fit.fits is False:
            return Concern.OVER_WINDOW, (f"⚠ {fit.message}. F9 drops the oldest turns to fit "
                                         "and sends; Enter sends it as it is")
        return None

    def hold(self, text: str) -> bool:
        """True (and said) when `text` should not be sent yet; said once, so Enter again sends it."""
        found = self.concern(text)
        if found is None or self._warned == (text, found[0]):
            self._warned = None  # sent: the same text another time is warned about again
            return False
        self._warned = (text, found[0])
        self.parts.notify(found[1], severity=Severity.WARNING, title="Before sending", timeout=15)
        return True

    def fit_and_send(self, text: str) -> str:
        """F9: the drop-oldest policy with the server's window, then send. "" when sent, else why not (nothing
        is changed then)."""
        parts = self.parts
        window, _kind = server_window(parts)
        if parts.streaming:
            return "a reply is still streaming: Esc stops it first"
        if parts.client is None or window is None:
            return "F9 fits a message to the server's window: no server has said one"
        if not text.strip():
            return "nothing to send"
        before = parts.history.settings_before("policy")
        changes: dict[str, str | int] = {"name": "drop-oldest"}
        if not parts.wb.policy.context_window or parts.wb.policy.context_window > window.tokens:
            changes["context_window"] = window.tokens
        parts.wb.set_policy(**changes)
        parts.history.settings_changed(f"policy drop-oldest, window {window.tokens:,}", before)
        parts.changed()
        self._warned = None
        return "" if self.submit(text) else "not sent"
