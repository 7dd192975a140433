"""The habits of chat tools in a real terminal (tmux) against the real server (issue 19, item 3): per-message
figures, slash commands with completion, `//`, prompt history and its search, the content search of saved
sessions, and the warning before a request over the server's window with F9 to fit it."""

from __future__ import annotations

import re

import pytest

from test_e2e_history import ask, saved_texts, until
from test_e2e_tmux import tmux, wait_for_reply  # noqa: F401 - tmux is a fixture
from tmux_driver import Tmux
from tui.context.messages import Message
from tui.sessions.model import Session
from tui.sessions.store import load_session, save_session


def composer(tmux) -> str:
    """The text on the composer's rows (drawn between its left and right borders), its top and bottom left out."""
    rows = [line.split("▊", 1)[1].split("▎", 1)[0] for line in tmux.screen().splitlines() if "▊" in line]
    return "\n".join(row.strip() for row in rows if row.strip(" ▔▁"))


def clear(tmux) -> None:
    tmux.keys("C-a", "C-k")
    assert until(lambda: not composer(tmux)), composer(tmux)


@pytest.fixture()
def wide(tmp_path):
    """Wide enough for a reply's header with all its figures on one row."""
    terminal = Tmux(tmp_path, width=210)
    yield terminal
    terminal.stop()


@pytest.mark.server
def test_figures_slash_commands_and_prompt_history(llama_server, wide):
    tmux = wide
    tmux.start("--base-url", llama_server, "--no-scan")
    tmux.wait_for(r"llama\.cpp at http://127\.0\.0\.1")
    ask(tmux, "Name a fruit.", 1)
    ask(tmux, "Name a colour.", 2)
    record = wait_for_reply(tmux, 2)
    generated = record.usage["completion_tokens"]
    figures = tmux.wait_for(r"assistant #3 +(\d+) tok · (\d+) generated · first token (\d+\.\d\d) s · "
                            r"([\d.]+) tok/s · (\d+)% cached")
    assert int(figures.group(2)) == generated and float(figures.group(4)) > 0
    assert int(figures.group(5)) == round(100 * record.timings["cache_n"] / record.usage["prompt_tokens"])
    # a command, completed with Tab, with the hint saying what it does
    tmux.keys("/sy", literal=True)
    tmux.wait_for(r"/system \[text\] — set the system prompt")
    tmux.keys("Tab")
    tmux.keys("Be brief.", literal=True)
    assert until(lambda: "/system Be brief." in composer(tmux)), composer(tmux)
    tmux.keys("Enter")
    assert until(lambda: saved_texts(tmux)[:1] == ["Be brief."]), saved_texts(tmux)
    # a mistyped command is said and stays; // sends the slash
    tmux.keys("/nosuch", literal=True)
    tmux.keys("Enter")
    tmux.wait_for(r"no command /nosuch")
    assert "/nosuch" in composer(tmux)
    clear(tmux)
    tmux.keys("//etc/hosts holds what?", literal=True)
    tmux.keys("Enter")
    assert wait_for_reply(tmux, 3, 60) is not None
    assert "/etc/hosts holds what?" in saved_texts(tmux)
    # /context: the grid of the window
    tmux.keys("/context", literal=True)
    tmux.keys("Enter")
    tmux.wait_for(r"Context of a 8,192-token window, exact counts")
    tmux.wait_for(r"free +\d[\d,]* +\d+%")
    tmux.keys("Escape")
    assert until(lambda: "Context of a" not in tmux.screen())  # (Esc and an arrow in one write read as Alt+arrow)
    # prompt history: Up in the empty composer, then Ctrl+R's search
    tmux.keys("Up")
    assert until(lambda: "/etc/hosts holds what?" in composer(tmux)), composer(tmux)
    tmux.keys("Up")
    assert until(lambda: "Name a colour." in composer(tmux)), composer(tmux)
    tmux.keys("Down", "Down")
    assert until(lambda: not composer(tmux)), composer(tmux)
    tmux.keys("C-r")
    tmux.wait_for(r"Prompt history")
    tmux.keys("fruit", literal=True)
    tmux.keys("Enter")
    assert until(lambda: "Name a fruit." in composer(tmux)), composer(tmux)


def long_history(turns: int = 6) -> list[Message]:
    return [Message("user" if i % 2 == 0 else "assistant", f"turn {i} " + "many words here " * 30, id=f"t{i}")
            for i in range(turns)]


@pytest.mark.server
def test_a_request_over_the_window_is_said_and_f9_fits_it(llama_512, tmux, tmp_path):
    path = tmp_path / "long.ctxpane.json"
    # a fixed seed: at a random one the tiny model now and then ends its reply at once, and a reply with no text
    # adds no message (seen once in a clean clone's run: the last message was the question)
    save_session(Session(title="long", messages=long_history(), params={"max_tokens": 8, "seed": 7}), path)
    tmux.start(str(path), "--base-url", llama_512, "--no-scan")
    tmux.wait_for(r"llama\.cpp at http://127\.0\.0\.1")
    tmux.keys("Short question?", literal=True)
    tmux.wait_for(r"Short question\?<\|im_end\|>")
    tmux.keys("Enter")
    tmux.wait_for(r"will not fit")
    assert load_session(path).session.requests == [] and "Short question?" in composer(tmux)
    tmux.keys("F9")
    assert until(lambda: (lambda s: s.requests and not s.requests[-1].incomplete)(load_session(path).session),
                 60), tmux.screen()
    session = load_session(path).session
    assert session.policy["name"] == "drop-oldest" and session.policy["context_window"] == 512
    assert session.requests[-1].dropped and session.messages[-1].role == "assistant"


def test_the_browser_finds_a_session_by_what_its_messages_say(tmux):
    folder = tmux.home / "data" / "ctxpane" / "sessions"
    folder.mkdir(parents=True)
    for number, word in enumerate(("apricot", "zeppelin", "marmalade")):
        session = Session(title=f"session {number}", messages=[
            Message("user", "what is this?", id="u"), Message("assistant", f"It is about a {word} today.", id="a")])
        save_session(session, folder / f"s{number}.ctxpane.json")
    tmux.start("--no-scan")
    tmux.wait_for(r"offline")
    tmux.keys("C-p")
    tmux.keys("Open session", literal=True)
    tmux.wait_for(r"browse, search, rename")
    tmux.keys("Enter")
    tmux.wait_for(r"Sessions in")
    tmux.keys("BTab")  # from the list (where n and x are keys) to the search box
    tmux.keys("zeppel", literal=True)
    found = tmux.wait_for(r"session 1 .*#1.*zeppelin", timeout=30)
    screen = tmux.screen()
    assert "session 0" not in screen and "session 2" not in screen, screen
    assert re.search(r"zeppelin", found.group(0))
