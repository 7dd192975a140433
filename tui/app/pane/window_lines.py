"""The Ledger's answer to "was this phrase in the window?", request by request (tui/context/policy/window_search.py
computes it; this only words it). Every role, reason and the phrase come from outside: shown through one_line."""

from __future__ import annotations

from rich.text import Text

from tui.context.policy.window_search import Occurrence, ReplyCheck, RequestFinding, Standing, WindowSearch

from tui.app.shown import one_line

REPLY_WORDS = {ReplyCheck.CONTAINS: "the reply contains it", ReplyCheck.LACKS: "the reply lacks it"}
MAX_FINDINGS = 200  # requests listed, newest first (the counts above cover them all)


def window_lines(result: WindowSearch) -> Text:
    """A line for the whole search, then one per request, newest first."""
    present, absent = result.numbers(Standing.PRESENT), result.numbers(Standing.ABSENT)
    out = Text(one_line(f"by request: {result.phrase!r} reached {_ranges(present) or 'no sent request'}"
                        + (f"; not {_ranges(absent)}" if absent else "")), style="bold")
    out.append("\n(the reply checks are string checks: a reply can hold a phrase it did not take from the window)\n",
               style="dim")
    for finding in list(reversed(result.findings))[:MAX_FINDINGS]:
        out.append_text(_finding_line(finding))
    if result.unsearched:
        why = "the search stopped after its time" if result.cancelled else "the search's bound"
        out.append(f"{result.unsearched} older requests not searched ({why})\n", style="dim")
    if result.cut:
        out.append("the phrase was cut to its first 200 characters\n", style="dim")
    return out


def _finding_line(finding: RequestFinding) -> Text:
    name = f"request {finding.number}" if finding.sent else f"request {finding.number} (not sent yet)"
    if finding.standing is Standing.UNREADABLE:
        return Text(one_line(f"{name}: cannot say, the stored body cannot be read ({finding.unreadable})") + "\n",
                    style="yellow")
    if finding.standing is Standing.PRESENT:
        places = ", ".join(_place(o) for o in finding.occurrences)
        more = f" and {finding.count - len(finding.occurrences)} more" if finding.count > len(finding.occurrences) else ""
        words = f"{name}: in the window, {places}{more}"
        style = "green"
    else:
        words, style = f"{name}: not in the window", "red"
        for holder in finding.left_out:
            where = f"#{holder.place}" if holder.place is not None else "a message no longer in the session"
            words += f"; {where} {holder.role} holds it, left out by {holder.policy} since request {holder.since}"
    if finding.reply in REPLY_WORDS:
        words += f"; {REPLY_WORDS[finding.reply]}"
    if finding.held_elsewhere:
        words += "; the server also held an earlier response's context (previous_response_id), not searched here"
    return Text(one_line(words, 1000) + "\n", style=style)


def _place(found: Occurrence) -> str:
    where = f"#{found.place}" if found.place is not None else f"message {found.index + 1} of the request"
    token = f", token {found.token}" if found.token is not None else ""
    return f"{where} {found.role} ({found.part.value}, character {found.offset}{token})"


def _ranges(numbers: list[int]) -> str:
    """[1, 2, 3, 5] -> 'requests 1-3, 5'."""
    if not numbers:
        return ""
    runs: list[list[int]] = []
    for number in numbers:
        if runs and number == runs[-1][-1] + 1:
            runs[-1].append(number)
        else:
            runs.append([number])
    parts = [f"{run[0]}" if len(run) == 1 else f"{run[0]}-{run[-1]}" for run in runs]
    return ("request " if len(numbers) == 1 else "requests ") + ", ".join(parts)
