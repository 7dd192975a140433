"""End to end in a real terminal (tmux): the real server, and a kill -9 in the middle of a reply."""

import re
import signal

import pytest

from fault_server import FaultServer
from tmux_driver import Tmux
from tui.sessions.store import load_session
from session_files import session_data
from waiting import until


@pytest.fixture()
def tmux(tmp_path):
    terminal = Tmux(tmp_path)
    yield terminal
    terminal.stop()


@pytest.mark.server
def test_chat_with_the_real_server(llama_server, tmux):
    tmux.start("--base-url", llama_server, "--no-scan")
    tmux.wait_for(r"llama\.cpp at http://127\.0\.0\.1")
    # The tiny random model sometimes answers with nothing (a few % of requests): ask again, up to 3 times,
    # checking the count of every request sent.
    for attempt in range(3):
        question = f"Hello from tmux, how are you? ({attempt + 1})"
        tmux.keys(question, literal=True)
        shown = drafted(tmux, question, r"(\d+) tokens\s*exact")
        tmux.keys("Enter")
        record = wait_for_reply(tmux, attempt + 1)
        assert record is not None, tmux.screen()
        assert record.usage["prompt_tokens"] == shown, (shown, record.usage)
        reply = record.reply["content"].strip()
        if reply:
            break
    assert reply
    tmux.wait_for(re.escape(reply.split()[0]))
    tmux.wait_for(r"assistant #?\d*|assistant#\d+")


def drafted(tmux, question: str, count: str) -> int:
    """The pane's count once it is of the whole draft: the document ends with the question and the count is read
    off the same screen (the summary line and the document are drawn from one view)."""
    document, counted = tmux.wait_for_all(re.escape(question) + r"<\|im_end\|>", count)
    return int(counted.group(1))


def wait_for_reply(tmux, count, seconds=30):
    """The `count`-th request of the session file, once its reply is complete and its usage known."""
    def replied():
        files = tmux.sessions()
        if files:
            requests = load_session(files[0]).session.requests
            if len(requests) >= count and not requests[count - 1].incomplete and requests[count - 1].usage:
                return requests[count - 1]
        return None
    return until(replied, seconds, lambda: f"request {count}'s whole reply in the session file:\n{tmux.screen()}",
                 poll=0.1)


def saved_mid_reply(tmux, text: str = "partial reply", seconds: float = 20.0) -> None:
    """Wait until the autosave has written the streaming reply's text (how soon depends on the machine's load)."""
    tmux.saved(lambda raw: bool(raw.get("requests")) and
               (raw["requests"][-1].get("reply") or {}).get("content", "").startswith(text),
               seconds, f"the session file holding {text!r} while the reply streamed")


def test_kill_9_mid_reply_keeps_what_arrived(tmp_path, tmux):
    with FaultServer(delay=0.6) as server:
        tmux.start("--base-url", server.url + "/slow", "--no-scan")
        tmux.wait_for(r"openai-compatible at|unknown server|fault-model")
        tmux.keys("tell me a long story", literal=True)
        tmux.keys("Enter")
        tmux.wait_for(r"partial reply")
        saved_mid_reply(tmux)  # the reply keeps streaming; autosave runs while it does
        tmux.kill(signal.SIGKILL)
        files = tmux.sessions()
        assert len(files) == 1
        raw = session_data(files[0])  # a whole file, never a half-written one
        assert raw["requests"][-1]["reply"]["incomplete"] is True
        assert raw["requests"][-1]["reply"]["content"].startswith("partial reply")
        tmux.stop()
        again = Tmux(tmp_path)
        try:
            again.start(str(files[0]), "--no-scan")
            again.wait_for(r"incomplete")
            again.wait_for(r"partial reply")
        finally:
            again.stop()
    session = load_session(files[0]).session
    assert session.messages[-1].role == "assistant" and session.messages[-1].incomplete
    assert session.messages[-1].text().startswith("partial reply")


@pytest.mark.server
def test_a_300_token_window_set_in_the_settings_screen_drops_turns(llama_server, tmux):
    """F8: window 300, reply room 32, drop-oldest; chat until turns drop; the server counts what the pane said,
    and the Ledger tab lists what the request left out."""
    tmux.start("--base-url", llama_server, "--no-scan")
    tmux.wait_for(r"llama\.cpp at http://127\.0\.0\.1")
    tmux.keys("F8")
    tmux.wait_for(r"Settings \(saved with the session")
    # One key at a time (a burst of control keys and text in one write is read as one paste-like chunk), each
    # step waited for on the screen: window 300, reply room 32, the policy list opened, drop-oldest, applied.
    for key in ("C-a", "C-k", "300", "Tab", "C-a", "C-k", "32", "Tab"):
        tmux.keys(key)
    tmux.wait_for_all(r"Context window\s+300\b", r"Max tokens \(reply\)\s+32\b")
    tmux.keys("Enter")
    tmux.wait_for(r"▊\s+summarise\s+▎")  # the list is open (closed, it shows only the policy chosen)
    tmux.keys("Down")
    tmux.keys("Enter")
    tmux.wait_for(r"Truncation policy\s+▊\s+drop-oldest\b")
    tmux.keys("C-s")
    tmux.wait_for(r"of 300")
    tmux.wait_for(r"policy\s+(│\s*)?drop-oldest")  # the summary line may wrap before the name
    record = None
    for turn in range(1, 16):
        question = f"Tell me one short fact about the number {turn}, please."
        tmux.keys(question, literal=True)
        shown = drafted(tmux, question, r"(\d+) tokens\s*exact")
        tmux.keys("Enter")
        record = wait_for_reply(tmux, turn, seconds=60)
        assert record is not None, tmux.screen()
        assert record.usage["prompt_tokens"] == shown, (turn, shown, record.usage)
        assert record.body.get("max_tokens") == 32
        if record.dropped:
            break
    assert record is not None and record.dropped, "no turn was ever dropped"
    assert record.usage["prompt_tokens"] <= 300 - 32
    for shows in (r"what\s+tokens\s+count", r"next request:", r"still in the window\?"):
        tmux.keys("C-t")  # Document -> Tokens -> Cache -> Ledger, one key at a time, each tab seen
        tmux.wait_for(shows)
    screen = tmux.wait_for(r"drop-oldest").string
    assert screen.count("drop-oldest") >= 2, screen  # the summary line names the policy; the ledger its rows
