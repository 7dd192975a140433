"""The app in tap mode: a request another program sends through the tap shows up live, with its pane."""

from __future__ import annotations

import asyncio
import re

import openai
import pytest
from textual.widgets import OptionList, Static

from tui.app.pane.pane import ContextPane
from app_helpers import plain
from tui.app.tap_app import TapApp
from tap_helpers import ended_and_listed, listed_line, listening
from waiting import eventually

pytestmark = pytest.mark.server
KEY = "sk-app-tap-secret-0123456789"


async def test_a_tapped_conversation_shows_live_with_the_clients_cut(llama_server, tmp_path):
    app = TapApp(llama_server, tmp_path, port=0)
    async with app.run_test(size=(160, 44)) as pilot:
        await listening(pilot, app)
        sdk = openai.OpenAI(base_url=app.url, api_key=KEY, max_retries=0, timeout=60)
        params = {"model": "tiny-qwen3", "max_tokens": 5, "temperature": 0}
        history = [{"role": "system", "content": "Tap mode."}, {"role": "user", "content": "one"}]

        def agent() -> None:
            for turn in range(2):
                reply = sdk.chat.completions.create(messages=history, **params)
                history.extend([{"role": "assistant", "content": reply.choices[0].message.content},
                                {"role": "user", "content": f"turn {turn}"}])
            del history[1:3]  # the agent drops its first exchange
            stream = sdk.chat.completions.create(messages=history, stream=True, **params)
            assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices)

        await asyncio.to_thread(agent)
        listing = app.query_one("#tap-list", OptionList)
        await ended_and_listed(pilot, app, 3)
        labels = [str(listing.get_option_at_index(i).prompt) for i in range(3)]
        assert all("c1." in label for label in labels) and "client cut 2" in labels[2]
        assert "OpenAI/Python" in labels[0]
        pane = app.query_one(ContextPane)
        assert "conversation 1 · request 3" in str(pane.query_one("#summary", Static).render())
        assert "turn 1" in pane.view.document.text and "one" not in pane.view.document.text.split("turn 0")[0][-40:]
        detail = str(app.query_one("#tap-detail", Static).render())
        assert "the client cut" in detail and "truncation shift" in detail
        for tab in ("ledger", "cache", "diff"):
            pane.query_one("#tabs").active = tab
            await eventually(lambda tab=tab: pane.query(f"#{tab}-view"), pilot=pilot, what=f"the {tab} tab to mount")
            await pilot.pause()  # its TabActivated fills it
        ledger = plain(pane.query_one("#ledger-table"))
        assert "client" in ledger and "left it out" in ledger
        diff = plain(pane.query_one("#diff-view"))  # against the previous request of the conversation
        assert "gone" in diff and "m1" in diff and "m2" in diff
        app.save_screenshot(str(tmp_path / "tap.svg"))
        screen = (tmp_path / "tap.svg").read_text()
        assert KEY not in screen


async def test_a_streaming_reply_is_followed_while_it_streams(tmp_path):
    from tap_helpers import LoopbackUpstream

    upstream = LoopbackUpstream()
    app = TapApp(upstream.url, tmp_path, port=0)
    try:
        async with app.run_test(size=(140, 30)) as pilot:
            await listening(pilot, app)
            import httpx
            async with httpx.AsyncClient(timeout=30) as http:
                async with http.stream("POST", f"{app.url}/slow/v1/chat/completions", params={"n": "30"},
                                       json={"model": "m", "stream": True,
                                             "messages": [{"role": "user", "content": "slowly"}]}) as response:
                    lines = response.aiter_lines()
                    seen = []
                    async for line in lines:
                        if line.startswith("data: {"):
                            seen.append(line)
                        if len(seen) == 15:
                            break
                    def streamed() -> int:  # the bytes the line says have gone through (0 before it says so)
                        said = re.search(r"streaming… (\d+) bytes", listed_line(app, 1))
                        return int(said.group(1)) if said else 0
                    first = await eventually(streamed, pilot=pilot,  # mid-reply, the line says so
                                             what=lambda: f"the line to say it streams: {listed_line(app, 1)!r}")
                    for _ in range(6):
                        await lines.__anext__()
                    await eventually(lambda: streamed() > first, pilot=pilot,  # and it follows
                                     what=lambda: f"more than {first} bytes on the line: {listed_line(app, 1)!r}")
                    async for _ in lines:
                        pass
            await ended_and_listed(pilot, app, 1)
            label = listed_line(app, 1)
            assert "streaming" not in label and re.search(r"· \d+\.\d\ds", label)
    finally:
        upstream.stop()
