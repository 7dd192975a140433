"""The composer's wrapped height is read from Textual's per-row table instead of summed on every drawn row (a
megabyte draft made that most of a keystroke). It must stay what Textual itself computes: this test fails if a
Textual upgrade changes the table it reads, before a user sees a composer of the wrong height."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.document._wrapped_document import WrappedDocument

from tui.app.chat.composer import Composer


class OneComposer(App[None]):
    def compose(self) -> ComposeResult:
        yield Composer(id="composer")


def textuals_own_height(composer: Composer) -> int:
    return WrappedDocument.height.fget(composer.wrapped_document)  # type: ignore[attr-defined]


async def test_the_composers_height_is_textuals_through_edits_and_resizes():
    app = OneComposer()
    async with app.run_test(size=(40, 20)) as pilot:
        composer = app.query_one(Composer)
        assert type(composer.wrapped_document) is not WrappedDocument  # the shortcut is in place
        for text in ("", "short", "a line far longer than the forty columns of this terminal " * 3,
                     "one\ntwo\n\nthree " + "word " * 40, "x" * 500 + "\n" + "y" * 3):
            composer.load_text(text)
            await pilot.pause()
            assert composer.wrapped_document.height == textuals_own_height(composer) > 0
        composer.move_cursor(composer.document.end)
        composer.insert(" more words to wrap again" * 5)
        await pilot.pause()
        assert composer.wrapped_document.height == textuals_own_height(composer)
        await pilot.resize_terminal(25, 20)
        await pilot.pause()
        assert composer.wrapped_document.height == textuals_own_height(composer)
