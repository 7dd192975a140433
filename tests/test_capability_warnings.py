"""Before sending, what the server cannot take is said, with what to do (issue 19, item 3): an image to a server
whose /props says no vision; a request over the server's window, with F9 to drop the oldest turns and send."""

from __future__ import annotations

from controller_helpers import Harness
from image_bytes import png
from tui.context.messages import Message
from tui.controller.capabilities import Concern
from tui.controller.events import Notice
from tui.sessions.model import Session


async def on_server(tmp_path, monkeypatch, url: str, session: Session) -> Harness:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    made = Harness(tmp_path, base_url=url, tokenizer="")
    made.ctl.adopt(session, None)
    made.ctl.connect()
    await made.idle()
    assert made.ctl.client is not None
    return made


async def typed(made: Harness, text: str) -> None:
    made.ctl.set_draft(text)
    await made.idle()  # the pane's view of the message, as the user sees it before Enter


def warnings(made: Harness) -> list[str]:
    return [n.text for n in made.of(Notice) if n.title == "Before sending"]


def history(turns: int) -> list[Message]:
    return [Message("user" if i % 2 == 0 else "assistant", f"turn {i} " + "many words here " * 30, id=f"t{i}")
            for i in range(turns)]


async def test_over_the_window_is_said_once_then_enter_sends_it_as_it_is(tmp_path, monkeypatch, llama_512):
    made = await on_server(tmp_path, monkeypatch, llama_512, Session(messages=history(6),
                                                                     params={"max_tokens": 8}))
    try:
        ctl = made.ctl
        await typed(made, "And now?")
        assert ctl.capabilities.concern("And now?")[0] is Concern.OVER_WINDOW
        assert not ctl.submit("And now?") and not ctl.wb.session.requests  # held: not sent
        [said] = warnings(made)
        assert "will not fit" in said and "512" in said and "F9" in said and "Enter" in said
        assert ctl.submit("And now?")  # the second Enter: sent as it is, the server says what it does
        await made.until_replied()
        assert len(ctl.wb.session.requests) == 1 and len(warnings(made)) == 1
    finally:
        made.ctl.close()


async def test_f9_drops_the_oldest_turns_to_fit_and_sends(tmp_path, monkeypatch, llama_512):
    made = await on_server(tmp_path, monkeypatch, llama_512, Session(messages=history(6),
                                                                     params={"max_tokens": 8, "temperature": 0}))
    try:
        ctl = made.ctl
        await typed(made, "Short question?")
        assert not ctl.submit("Short question?")
        assert ctl.capabilities.fit_and_send("Short question?") == ""
        await made.until_replied()
        record = ctl.wb.session.requests[-1]
        assert ctl.wb.policy.name == "drop-oldest" and ctl.wb.policy.context_window == 512
        assert record.dropped and record.fit["fits"] is True  # it fitted, so the server answered it
        assert ctl.wb.session.messages[-1].role == "assistant" and len(ctl.wb.session.messages) == 8  # none lost
        ctl.history.undo()  # the policy switch is one change in the history
        assert ctl.wb.policy.name == "keep-all"
    finally:
        made.ctl.close()


async def test_an_image_to_a_server_without_vision_is_said_before_it_is_sent(tmp_path, monkeypatch, llama_server):
    made = await on_server(tmp_path, monkeypatch, llama_server, Session(params={"max_tokens": 4}))
    try:
        ctl = made.ctl
        assert ctl.link.connection.info.vision is False  # the tiny text model's /props says so
        image = tmp_path / "chart.png"
        image.write_bytes(png(64, 64))
        ctl.attach(f"file:{image}", "")
        await made.idle()
        await typed(made, "What is in the chart?")
        assert not ctl.submit("What is in the chart?")
        [said] = warnings(made)
        assert "takes no images" in said and "holds 1" in said
        assert ctl.submit("What is in the chart?")
        await made.until_replied()
        assert len(ctl.wb.session.requests) == 1
    finally:
        made.ctl.close()


async def test_nothing_is_said_when_the_server_takes_it(tmp_path, monkeypatch, llama_server):
    made = await on_server(tmp_path, monkeypatch, llama_server, Session(params={"max_tokens": 4}))
    try:
        await typed(made, "Hello?")
        assert made.ctl.submit("Hello?")
        await made.until_replied()
        assert not warnings(made)
    finally:
        made.ctl.close()
