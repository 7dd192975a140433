"""Keys typed right after Enter, while the app takes the message, stay in the composer (issue 19).

Before: the app cleared the composer once it had taken the message; keys the composer had handled in the
meantime (its queue runs on while the app decides) were wiped with it.
"""

from __future__ import annotations


from app_helpers import isolated, make_app, settle
from key_bursts import post as burst
from tui.app.chat.composer import Composer




async def test_keys_typed_after_enter_are_kept_and_the_sent_text_goes(tmp_path, monkeypatch):
    isolated(monkeypatch, tmp_path)
    app = make_app(tmp_path, offline=True)
    sent: list[str] = []

    def take(text: str) -> bool:
        sent.append(text)
        return True
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        app.controller.submit = take
        burst(app, [*"first", "enter", *"second"])
        await settle(pilot, app)
        composer = app.query_one(Composer)
        assert sent == ["first"]
        assert composer.text == "second"
        await pilot.press("x")
        assert composer.text == "secondx"  # the cursor stayed after what was typed


async def test_a_message_the_app_refuses_stays_whole(tmp_path, monkeypatch):
    isolated(monkeypatch, tmp_path)
    app = make_app(tmp_path, offline=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        app.controller.submit = lambda text: False
        burst(app, [*"kept", "enter", "!"])
        await settle(pilot, app)
        assert app.query_one(Composer).text == "kept!"
