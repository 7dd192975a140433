"""The document layout: rows cover the text exactly, and incremental updates equal fresh layouts."""

from hypothesis import given, settings
from hypothesis import strategies as st

from tui.app.pane.document_layout import DocLayout, Note, wrap_points

pieces = st.sampled_from(["a", "bb", "\n", "\n\n", "一", "👋", "x" * 30, " ", "é"])
texts = st.lists(pieces, max_size=40).map("".join)


def fresh(text, notes, width):
    layout = DocLayout()
    layout.update(text, notes, width)
    return layout


def shown_text(layout):
    parts = []
    for row in range(layout.height):
        line, start, end = layout.locate(row)
        if line.note is None:
            parts.append(layout.text[start:end])
    return parts


@settings(max_examples=300, deadline=None, derandomize=True)
@given(first=texts, second=texts, cut=st.integers(0, 60), width=st.integers(3, 20),
       note_at=st.lists(st.integers(0, 80), max_size=3))
def test_incremental_equals_fresh(first, second, cut, width, note_at):
    before = first + second
    after = first[:cut] + second
    notes_before = [(min(o, len(before)), Note(f"n{o}", "cache")) for o in note_at]
    notes_after = [(min(o, len(after)), Note(f"n{o}", "cache")) for o in note_at]
    layout = fresh(before, notes_before, width)
    layout.update(after, notes_after, width)
    expected = fresh(after, notes_after, width)
    assert layout.lines == expected.lines and layout.rows == expected.rows
    assert "".join(shown_text(layout)) == after.replace("\n", "")


def test_wrap_keeps_wide_characters_whole():
    assert wrap_points("一二三", 4) == [0, 2]
    assert wrap_points("abcdef", 4) == [0, 4]
    assert wrap_points("", 4) == [0]


def test_notes_split_lines_and_take_one_row():
    layout = fresh("hello world\nnext", [(5, Note("cache boundary", "cache"))], 40)
    rows = [layout.locate(r) for r in range(layout.height)]
    assert [(line.note.text[s:e] if line.note else layout.text[s:e]) for line, s, e in rows] == \
        ["hello", "cache boundary", " world", "next"]
    narrow = fresh("hello", [(0, Note("a long note that wraps", "cache"))], 10)
    assert [narrow.locate(r)[0].note is not None for r in range(narrow.height)] == [True, True, True, False]
    folded = fresh("hello", [(0, Note("a long note that wraps", "dropped"))], 10)  # a drop note: one row
    assert [folded.locate(r)[0].note is not None for r in range(folded.height)] == [True, False]
    assert layout.row_of(6) == 2
