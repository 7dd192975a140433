"""The one line above the pane's tabs: the request at a glance."""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING

from rich.text import Text

if TYPE_CHECKING:
    from tui.context.policy.truncation import PolicySettings
    from tui.context.request import RequestView
    from tui.context.fit.window import FitCheck

from tui.app.shown import one_line


class TemplateStanding(Enum):
    """How the template the figures come from stands to the one the server renders with."""

    ITS_OWN = "its own"  # the server's template, or no server to differ from
    ASSUMED = "assumed"  # the server's template is unseen (a gateway, a hosted API): this one is a guess
    WHAT_IF = "what-if"  # the server renders its own template: these figures are for the one picked here


def summary_text(view: RequestView, policy: PolicySettings, previous: object | None, read_only: bool = False,
                 prefix: str = "", standing: TemplateStanding = TemplateStanding.ITS_OWN,
                 fit: FitCheck | None = None) -> Text:
    """The pane's header line. `previous`: the request before this one, if any (the cache line compares them)."""
    what_if = standing is TemplateStanding.WHAT_IF
    counts = view.snapshot.counts
    text = Text(one_line(prefix))
    text.append(f"{view.sent_tokens} tokens", style="bold")
    label = "what-if" if what_if else "exact" if counts.exact and not view.image_tokens else "estimate"
    images = "; text exact, images estimated" if counts.exact and view.image_tokens and not what_if else ""
    text.append(f" {label} ({one_line(counts.tokenizer, 60)}{images})")  # what-if: not the server's count
    text.append(f" of {policy.context_window}" if policy.context_window else "")
    text.append(f" · template {one_line(view.snapshot.template, 60)}")
    if standing is TemplateStanding.ASSUMED:
        text.append(" (assumed)", style="bold yellow")
    if what_if:
        text.append(" (what-if)", style="bold magenta")
    text.append(f" · policy {one_line(policy.name, 30)}")
    if previous is not None:
        text.append(f" · cached above {view.prefix.tokens} / new below {view.prefix.total_tokens - view.prefix.tokens}")
    if view.ledger:
        text.append(f" · {len(view.ledger)} dropped", style="bold yellow")
    if counts.content_controls:
        plural = "s" if counts.content_controls != 1 else ""
        text.append(f" · server reads {counts.content_controls} control string{plural} in your text as tokens",
                    style="bold red")
    if view.fences:
        text.append(f" · {len(view.fences)} fenced")
    if view.forged:
        text.append(f" · {len(view.forged)} FORGED", style="bold red")
    if read_only:
        text.append(" · read-only", style="bold")
    add_fit(text, fit)
    return text


def add_fit(text: Text, fit: FitCheck | None) -> None:
    """Before sending, loudly: the request as it stands will not fit the server's real window."""
    if fit is None or fit.fits is not False or fit.window is None:
        return
    window = f"window {fit.window.tokens} ({one_line(fit.window.source, 20)})"
    if fit.over_by:
        text.append(f" · ⚠ {fit.over_by} tokens over the server's {window}: {one_line(fit.consequence, 80)}",
                    style="bold red")
    else:
        text.append(f" · ⚠ {fit.reply_room} tokens left in the server's {window} for a reply of up to "
                    f"{fit.max_tokens}: {one_line(fit.consequence, 80)}", style="bold yellow")
