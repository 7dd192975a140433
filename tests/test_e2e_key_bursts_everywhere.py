"""Bursts of keys at full speed arrive whole in every input, in a real terminal (issue 19): tmux sends each burst
in one write. 20 bursts each into the rename and system prompt dialogs, the transcript search, the session
browser's search box, and the composer while a reply streams; the text each should hold is computed by
`LineEditor` (key_bursts.py) and read off the screen (and, for the dialogs, from the saved session afterwards).
"""

from __future__ import annotations

import random
import re
import string
import time

import pytest

from fault_server import FaultServer
from key_bursts import LineEditor, random_burst
from tmux_driver import Tmux

RUNS = 20
TMUX_NAMES = {"backspace": "BSpace", "delete": "DC", "left": "Left", "right": "Right", "home": "Home", "end": "End"}
# No space (a TextArea's Home stops at the first non-blank) and no R: each burst ends with End, R and the run's
# number, so the text on screen is the burst's last state, never one it passed through.
TYPED = string.ascii_lowercase + string.digits + "._/:,?"
WORD = r"[\w.,/:?]"


@pytest.fixture()
def tmux(tmp_path):
    terminal = Tmux(tmp_path)
    yield terminal
    terminal.stop()


def burst(run: int, seed: str) -> tuple[list[str], str]:
    """Keys for tmux (clear the line first: Ctrl+A, Ctrl+K) and the text they leave."""
    keys = [*random_burst(random.Random(f"{seed}-{run}"), 20, TYPED), "end", "R", *f"{run:02d}"]
    return ["C-a", "C-k", *(TMUX_NAMES.get(key, key) for key in keys)], LineEditor().after(keys).text


def send_and_see(tmux: Tmux, run: int, seed: str, before: tuple[str, ...] = ()) -> str:
    keys, expected = burst(run, seed)
    tmux.keys(*before, *keys)
    tmux.wait_for(rf"(?<!{WORD}){re.escape(expected)}(?!{WORD})", timeout=10)
    return expected


def palette(tmux: Tmux, entry: str, shown: str) -> None:
    tmux.keys("C-p")
    tmux.wait_for(r"🔎")
    tmux.keys(entry, literal=True)
    tmux.wait_for(rf"\n\s+{re.escape(entry)}\s*\n")  # the entry is listed: Enter picks it
    tmux.keys("Enter")
    tmux.wait_for(shown)


def test_bursts_arrive_whole_in_the_rename_and_system_prompt_dialogs(tmux):
    """The key that closes one dialog, the one that opens the next and the text for it go in one write too:
    Ctrl+S (rename saved), Ctrl+E and the system prompt; Ctrl+S and a draft for the composer; F8 and a window."""
    tmux.start("--no-scan")
    tmux.wait_for(r"offline")
    palette(tmux, "Rename session", r"Session title")
    titles = [send_and_see(tmux, run, "rename") for run in range(RUNS)]
    prompts = [send_and_see(tmux, run, "system", () if run else ("C-s", "C-e")) for run in range(RUNS)]
    send_and_see(tmux, 0, "composer", ("C-s",))
    tmux.wait_for(rf"ctxpane — {re.escape(titles[-1])}")
    tmux.saved(lambda raw: raw.get("title") == titles[-1] and any(
        message.get("role") == "system" and message.get("content") == prompts[-1] for message in raw["messages"]))
    send_and_see(tmux, 0, "settings", ("F8",))
    tmux.wait_for(r"Settings \(saved with the session")


def test_bursts_arrive_whole_in_the_transcript_search(tmux):
    tmux.start("--no-scan")
    tmux.wait_for(r"offline")
    palette(tmux, "Search transcript", r"Search the transcript")
    for run in range(RUNS):
        send_and_see(tmux, run, "search")


def test_bursts_arrive_whole_in_the_session_browser_search(tmux):
    tmux.start("--no-scan")
    tmux.wait_for(r"offline")
    palette(tmux, "Open session", r"Sessions in")
    for run in range(RUNS):  # the first burst starts with Shift+Tab, from the list to the search box
        send_and_see(tmux, run, "browser", () if run else ("BTab",))


def test_bursts_arrive_whole_in_the_composer_while_a_reply_streams(tmux):
    with FaultServer(delay=2.0) as server:  # /slow: three chunks 2 s apart, then 20 s before it ends
        tmux.start("--base-url", server.url + "/slow", "--no-scan")
        tmux.wait_for(r"openai-compatible at|unknown server|fault-model")
        tmux.keys("tell me a long story", literal=True)
        tmux.keys("Enter")
        tmux.wait_for(r"partial")
        started = time.monotonic()
        for run in range(RUNS):
            send_and_see(tmux, run, "streaming")
        assert time.monotonic() - started < 20, "the reply ended before the bursts did"
