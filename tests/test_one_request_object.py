"""One request object (issue 18): the body previewed in the Request tab, copied as curl, stored in the session
and exported is the body sent, byte for byte, seen through a recording proxy in front of the real server.

Before: against llama.cpp every body carried `logprobs: true, top_logprobs: 1`, added after the previewed body
was built; the Request tab and the curl copy did not show them.
"""

from __future__ import annotations

import json
import shlex

from app_helpers import isolated, make_app, settle
from tap_helpers import RunningTap
from tui.app.pane.request_tab import RequestView
from tui.context.request_bytes import request_bytes
from tui.sessions.store import load_session
from tui.sessions.transfer import export_curl, export_request


def curl_data(command: str) -> bytes:
    words = shlex.split(command.replace("\\\n", " "))
    return words[words.index("-d") + 1].encode("utf-8")


async def test_preview_curl_stored_and_exported_bodies_are_the_bytes_the_server_received(
        llama_server, tmp_path, monkeypatch):
    isolated(monkeypatch, tmp_path)
    tap = RunningTap(llama_server.removesuffix("/v1"), tmp_path / "tapped")
    try:
        app = make_app(tmp_path, flags={"base_url": f"{tap.url}/v1", "max_tokens": 8})
        async with app.run_test(size=(160, 48)) as pilot:
            for _ in range(100):
                await settle(pilot, app)
                if app.controller.client is not None and app.controller.wb.server_cache is not None:
                    break
            text = "What is the byte for byte body? ünïcödé \u202e and a tab\t."
            app.query_one("Composer").text = text  # (typed: a bidi control and a tab type as themselves)
            await settle(pilot, app)
            app.query_one("#tabs").active = "request"
            await settle(pilot, app)
            shown = app.query_one(RequestView).text
            preview_json, _, preview_curl = shown.partition("\n\n# as curl\n")
            await app.run_action("copy_curl")
            copied = app.clipboard
            await pilot.press("enter")
            for _ in range(300):
                await settle(pilot, app)
                if not app.controller.streaming and app.controller.wb.session.requests:
                    break
            path = app.controller.file.session_file
            app.controller.file.save()
            app.controller.close()
        tap.settle()
        chats = [t.exchange for t in tap.recorder.tapped.values() if t.exchange.path.endswith("/chat/completions")]
        assert len(chats) == 1
        received = chats[0].body
        sent = json.loads(received)
        assert sent["logprobs"] is True and sent["top_logprobs"] == 1  # the cache model asks for them
        assert sent["messages"][-1]["content"] == text
        # the preview, before sending: the same JSON value; its curl and the copied curl: the same bytes
        assert json.loads(preview_json) == sent
        assert curl_data(preview_curl) == received and curl_data(copied) == received
        session = load_session(path).session
        assert request_bytes(session.requests[0].body) == received
        assert export_request(session, 1).encode("utf-8") == received
        assert curl_data(export_curl(session, 1)) == received
    finally:
        tap.stop()
