"""The one way text from outside reaches the screen: as Text, never as markup, never as escape sequences.

Model output, server answers and errors, template errors, file names, titles, labels, model ids,
message text and search results all pass through here. `visible()` swaps control, BiDi, tag,
zero-width and private-use characters for visible stand-ins; the result is a Rich `Text`, which
Textual shows as it is (no markup parsing). Strings are bounded so one huge value cannot stall a
redraw; the context pane's document view, which has to show everything, draws its lines itself.
"""

from __future__ import annotations

from typing import Any, Iterable

from rich.text import Text

from tui.context.untrusted.visible import visible

MAX_SHOWN = 200_000  # characters in one widget (a message body); the document view shows all
MAX_LINE = 240  # characters in a one-line place: a title, a label, a table cell, an option


def bounded(value: object, limit: int = MAX_SHOWN) -> str:
    """`value` as a string, made visible and cut to `limit` characters with the cut said."""
    text = value if isinstance(value, str) else str(value)
    if len(text) > limit:
        text = text[:limit] + f"… [{len(text) - limit:,} more characters not shown here]"
    return visible(text)


def one_line(value: object, limit: int = MAX_LINE) -> str:
    """A single-line, bounded, visible string: for titles, labels, cells and notifications' titles."""
    text = value if isinstance(value, str) else str(value)
    text = text[: limit * 2].replace("\r\n", "↵").replace("\n", "↵")
    return bounded(text, limit)


def drawn(text: str) -> str:
    """How a line-drawing view (the document) shows raw text: visible stand-ins, and a tab as one '⇥' cell
    (a raw tab would make the terminal jump to its next tab stop, past cells that are never redrawn)."""
    return visible(text).replace("\t", "⇥")


def drawn_width(char: str) -> int:
    """Cells that `drawn(char)` takes on screen."""
    from rich.cells import cell_len
    return cell_len(drawn(char))


def message_text(message: Any, image_family: str = "") -> str:
    """A message's text for the chat: its text parts, each image part a short label, never its data."""
    from tui.context.images.tokens import image_label
    from tui.context.messages import image_parts
    text = message.text()
    parts = image_parts(message.content)
    if not parts:
        return text
    labels = [visible(image_label(part, image_family)) for part in parts]
    return "\n".join([*labels, text] if text else labels)


def shown(value: object, style: str = "", limit: int = MAX_SHOWN) -> Text:
    """Text from outside, ready for any widget: no markup parsed, nothing reaches the terminal raw."""
    return Text(bounded(value, limit), style=style)


def shown_line(value: object, style: str = "", limit: int = MAX_LINE) -> Text:
    return Text(one_line(value, limit), style=style)


def shown_parts(*parts: object | tuple[object, str]) -> Text:
    """Text from pieces, each a value or (value, style): every piece made visible, none parsed as markup."""
    out = Text()
    for part in parts:
        value, style = part if isinstance(part, tuple) else (part, "")
        out.append(bounded(value), style=style)
    return out


def cells(values: Iterable[object], limit: int = MAX_LINE) -> list[Text]:
    """Table cells (Rich `Table`, `DataTable`): strings there would be parsed as markup."""
    return [value if isinstance(value, Text) else shown_line(value, limit=limit) for value in values]


_STAND_INS = {"\x1b": "␛", "\x07": "␇", "\x00": "␀", "\r": "␍", "\x08": "␈"}


def one_cell(text: str) -> str:
    """Each unsafe character swapped for ONE visible character, so an editor's columns stay put."""
    if visible(text) == text:  # the common case: one regex pass, nothing to swap
        return text
    return "".join(char if visible(char) == char else _STAND_INS.get(char, "¤") for char in text)


class VisibleLines:
    """Mixin for Line-API widgets that show text as typed (TextArea, Input): no raw control reaches the terminal.

    The text itself is untouched (what you edit is what is sent); only the drawn segments change.
    """

    def render_line(self, y: int):  # noqa: ANN201 - a Strip
        strip = super().render_line(y)  # type: ignore[misc]
        from rich.segment import Segment
        from textual.strip import Strip
        segments = [Segment(one_cell(s.text), s.style, s.control) if not s.control else Segment("", s.style)
                    for s in strip]
        return Strip(segments).crop(0, strip.cell_length) if segments else strip


# Marks that need an emoji font, and their plain stand-ins (config.toml: glyphs = "plain"): set once at start.
EMOJI_GLYPHS = {"pin": "📌", "icon": "⭘"}
PLAIN_GLYPHS = {"pin": "*", "icon": "≡"}
GLYPHS = dict(EMOJI_GLYPHS)


def use_glyphs(kind: str) -> None:
    GLYPHS.update(PLAIN_GLYPHS if kind == "plain" else EMOJI_GLYPHS)
