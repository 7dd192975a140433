"""Two ctxpanes on one session, in real terminals: the one that opened it first writes it, the other reads only,
in deed. Each chats, renames and quits in turn; the file keeps every exchange and each quit line tells the truth."""

from __future__ import annotations

import re
import subprocess

import pytest

from fault_server import FaultServer
from session_files import session_data
from tmux_driver import Tmux
from tui.sessions.store import load_session
from waiting import until

CONNECTED = r"openai-compatible at|unknown server|fault-model"


def kept_after_exit(tmux: Tmux) -> None:
    """The pane stays when ctxpane ends, so the line it prints on the way out can be read."""
    subprocess.run(["tmux", "-L", tmux.name, "set-option", "-t", tmux.name, "remain-on-exit", "on"], check=True)


def ended(tmux: Tmux, timeout: float = 30.0) -> str:
    """The terminal's text once ctxpane has ended."""
    def dead() -> bool:
        out = subprocess.run(["tmux", "-L", tmux.name, "display-message", "-p", "-t", tmux.name, "#{pane_dead}"],
                             capture_output=True, text=True).stdout.strip()
        return out == "1"
    until(dead, timeout, lambda: f"ctxpane to quit:\n{tmux.screen()}", poll=0.05)
    # with the history (the line may have scrolled off), wrapped lines joined
    return subprocess.run(["tmux", "-L", tmux.name, "capture-pane", "-p", "-J", "-S", "-", "-t", tmux.name],
                          capture_output=True, text=True).stdout


def palette(tmux: Tmux, entry: str, shown: str) -> None:
    tmux.keys("C-p")
    tmux.wait_for(r"🔎")
    tmux.keys(entry, literal=True)
    tmux.wait_for(rf"\n\s+{re.escape(entry)}\s*\n")
    tmux.keys("Enter")
    tmux.wait_for(shown)


def replied(tmux: Tmux, question: str, count: int) -> None:
    """`question` sent, and its reply on the screen and in the file (`count` messages by then)."""
    tmux.keys(question, literal=True)
    tmux.keys("Enter")
    tmux.saved(lambda raw: len(raw.get("messages", [])) == count and raw["messages"][-1].get("content") ==
               "plain reply", 20, f"{count} messages saved, the last the reply to {question!r}")


@pytest.mark.parametrize("writer_quits_first", [True, False], ids=["writer-quits-first", "reader-quits-first"])
def test_two_apps_on_one_session_lose_no_exchange_and_each_quit_line_tells_the_truth(tmp_path, writer_quits_first):
    a, b = Tmux(tmp_path), Tmux(tmp_path)  # one home: one sessions folder
    with FaultServer(delay=0.01) as server:
        try:
            a.start("--base-url", server.url + "/plain", "--no-scan")
            kept_after_exit(a)
            a.wait_for(CONNECTED)
            replied(a, "first question", 2)
            [path] = a.sessions()
            holder = a.pid()

            b.start(str(path), "--base-url", server.url + "/plain", "--no-scan")
            kept_after_exit(b)
            b.wait_for(rf"held by another ctxpane \(pid {holder}\)")  # said on the composer
            b.wait_for(CONNECTED)
            b.keys("words from B", literal=True)
            b.keys("Enter")
            b.wait_for_all(r"not sent: read-only", r"words from B")  # refused; the text stays in the composer
            palette(b, "Rename session", r"Session title")
            b.keys(" by B", literal=True)
            b.keys("C-s")
            b.wait_for(r"not renamed: read-only")

            replied(a, "second question", 4)
            b.keys("C-q")  # the draft would be lost: said first
            b.wait_for(r"not quit: what you typed or")
            order = [(a, "C-q"), (b, "C-q")] if writer_quits_first else [(b, "C-q"), (a, "C-q")]
            lines = {}
            for app, key in order:
                app.keys(key)
                lines[app.name] = ended(app)
        finally:
            a.stop()
            b.stop()
    assert re.search(rf"ctxpane: session saved in .*{re.escape(path.name)}", lines[a.name]), lines[a.name]
    said = lines[b.name]
    assert (f"ctxpane: read-only: nothing saved; the session was held by another ctxpane (pid {holder}) when it "
            "was opened here; the 12 characters left unsent in the composer were not kept") in said, said
    assert "session saved" not in said
    session = load_session(path).session
    assert [m.text() for m in session.messages] == ["first question", "plain reply", "second question",
                                                   "plain reply"]
    assert session.title == "first question" and session_data(path)["title"] == "first question"
    assert a.sessions() == [path]  # B wrote no file of its own
