"""The app: Ctrl+O attaches an image; the chat shows its label (never its data) and the Tokens tab its
per-turn counts, labelled estimate."""

from __future__ import annotations

import pytest

from app_helpers import isolated, make_app, plain, settle
from image_bytes import png
from tui.app.chat.transcript import ChatView

SIZE = (160, 48)


@pytest.fixture()
def sessions(monkeypatch, tmp_path):
    return isolated(monkeypatch, tmp_path)


def chat_rows(app) -> str:
    view = app.screen.query_one(ChatView)
    return "\n".join("".join(segment.text for segment in view.render_line(y)) for y in range(view.size.height))


async def test_ctrl_o_attaches_an_image_shown_as_a_label_and_counted_per_turn(sessions, tmp_path):
    path = tmp_path / "chart.png"
    path.write_bytes(png(1024, 768))
    app = make_app(tmp_path, offline=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("ctrl+o")
        app.screen.query_one("#editor").text = f"file:{path}"
        await pilot.press("ctrl+s")
        await settle(pilot, app)
        added = app.wb.session.messages[-1]
        assert added.content[0]["width"] == 1024 and added.content[0]["format"] == "PNG"
        [image] = app.wb.view.hidden.images
        label = f"[image 1024×768 PNG, ~{image.estimate.tokens} tokens estimate]"
        shown = chat_rows(app)
        assert label in shown and "base64" not in shown
        app.query_one("#tabs").active = "tokens"
        await settle(pilot, app)
        tokens = plain(app.query_one("#tokens-view"))
        assert "per turn" in tokens and "images: estimate" in tokens
        turn = next(t for t in app.wb.view.hidden.turns if t.message_id == added.id)
        row = next(line for line in tokens.splitlines() if line.strip().startswith(f"#{turn.turn} "))
        assert str(turn.counts["images"]) in row.split()
        assert f"turn #{turn.turn}: {label}" in tokens and image.estimate.how in tokens
        app.save_screenshot(str(tmp_path / "tokens.svg"))
        # the Request tab shows the body, the image's data URL shortened (never the base64 whole)
        app.query_one("#tabs").active = "request"
        await settle(pilot, app)
        body = app.query_one("#request-view").text
        whole = added.content[0]["image_url"]["url"]
        assert whole not in body and whole[:40] in body and "image data URL shortened here" in body


async def test_the_tokens_tab_shows_reasoning_per_turn_and_what_the_template_dropped(sessions, tmp_path):
    from tui.context.messages import Message, Provenance
    from tui.sessions.model import Session
    from tui.sessions.store import session_text

    thought = "The user asks a sum. Two plus two is four."
    session = Session(title="reasoning", template={"name": "qwen3", "origin": "builtin"}, tokenizer="qwen3", messages=[
        Message("user", "2+2?", id="m0"),
        Message("assistant", "4.", reasoning_content=thought, provenance=Provenance("model", True), id="m1"),
        Message("user", "And 3+3?", id="m2"),
        Message("assistant", "6.", reasoning_content="Three and three make six.", provenance=Provenance("model", True),
                id="m3")])
    path = tmp_path / "reasoning.ctxpane.json"
    path.write_text(session_text(session), encoding="utf-8")
    app = make_app(tmp_path, offline=True, file=path, flags={"tokenizer": "qwen3"})
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        app.query_one("#tabs").active = "tokens"
        await settle(pilot, app)
        tokens = plain(app.query_one("#tokens-view"))
        first, last = (next(t for t in app.wb.view.hidden.turns if t.message_id == i) for i in ("m1", "m3"))
        assert first.reasoning_dropped > 0 and first.counts["reasoning"] == 0 and last.counts["reasoning"] > 0
        row = next(line for line in tokens.splitlines() if line.strip().startswith("#1 ")).split()
        assert row[-1] == str(first.reasoning_dropped)  # the dropped column, last
        last_row = next(line for line in tokens.splitlines() if line.strip().startswith("#3 ")).split()
        assert str(last.counts["reasoning"]) in last_row
        assert f"the template dropped {first.reasoning_dropped} reasoning tokens of turn #1:" in tokens
        assert "reasoning re-rendered" in tokens
        assert "per turn (text" in tokens and "images: estimate" not in tokens  # no image: no image rule named
