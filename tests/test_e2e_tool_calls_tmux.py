"""Tools in a real terminal (tmux): a tool call waits until the user opens it (Ctrl+L), goes through the isolated
review (a deny, shown beside the call), the explicit override, the command (F12), and a fenced tool result; the
reviewer's request is in the Review tab. A key burst at the moment a reply with a call ends runs nothing, sends
nothing and leaves the composer its text, for every binding of the app."""

from __future__ import annotations

import json
import re
import sys
import time

import pytest

from tmux_driver import Tmux
from tool_call_server import DENY, ToolCallServer
from waiting import until


@pytest.fixture()
def tmux(tmp_path):
    terminal = Tmux(tmp_path)
    yield terminal
    terminal.stop()


def test_a_denied_call_overridden_runs_and_its_result_goes_back_fenced(tmp_path, tmux):
    marker = tmp_path / "ran.txt"
    script = "import json, sys; a = json.load(sys.stdin); open(sys.argv[1], 'w').write(a['path']); print('deleted', a['path'])"
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([{"type": "function", "function": {"name": "delete_file", "parameters": {"type": "object"}},
                                  "risky": True, "command": [sys.executable, "-c", script, str(marker)]}]))
    with ToolCallServer(DENY) as server:
        tmux.start("--base-url", server.url, "--no-scan", "--tools", str(tools))
        tmux.wait_for(r"loaded 1 tools \(1 risky, 1 with a command\)")
        tmux.keys("Tidy my notes", literal=True)
        tmux.keys("Enter")
        tmux.wait_for(r"review of delete_file: DENY")
        assert "Tool call 1 of 1" not in tmux.screen()  # it waits: the dialog opens when asked
        tmux.keys("C-l")
        tmux.wait_for_all(r"Tool call 1 of 1: delete_file", r"reviewer \(tool-model\): DENY", r"Run is off: the reviewer denied it")
        time.sleep(1.0)  # the dialog takes keys once it has been on screen a moment
        tmux.keys("F12")  # Run, while denied: nothing happens
        tmux.wait_for(r"Tool call 1 of 1")
        assert not marker.exists()
        tmux.keys("C-g")
        tmux.wait_for(r"Run its command anyway\?")
        time.sleep(1.0)
        tmux.keys("y")
        until(marker.exists, 20, lambda: f"the command to run:\n{tmux.screen()}")
        tmux.wait_for(r"The tool said: <untrusted")  # the scripted reply echoes the fenced result it was sent
        assert server.requests[-1]["messages"][-1]["role"] == "tool"
        from tui.app.pane.pane import TABS
        tmux.keys(*["C-t"] * TABS.index("review"))  # from the Document tab to the Review tab
        tmux.wait_for_all(r"review of delete_file", r"its own request \(chat API, model tool-model\): \d+ tokens")


# tmux's names for the app's keys; a key tmux cannot send as a terminal would (Ctrl+comma) is left out
TMUX_KEYS = {"escape": "Escape", "tab": "Tab", "shift+tab": "BTab", "enter": "Enter"}
UNSENDABLE = {"ctrl+comma"}
# Bindings whose act in the composer is what a burst of them should do there: F9 sends the composer's text, Ctrl+Q
# quits; each is a deliberate key of its own (tried in their own tests), not a way for keys to reach a tool call.
LEFT_OUT = {"f9", "ctrl+q"}
# Keys that edit the composer itself (its undo and redo of typing): what it holds after them is theirs to decide.
EDITS_THE_COMPOSER = {"ctrl+z", "ctrl+y"}


def tmux_key(key: str) -> str:
    if key in TMUX_KEYS:
        return TMUX_KEYS[key]
    if key.startswith("ctrl+"):
        return "C-" + key.removeprefix("ctrl+")
    return key.upper() if key.startswith("f") and key[1:].isdigit() else key


def every_key_to_try() -> list[str]:
    """Ctrl+R first, then every other key the app and its tool-call dialogs bind (each once)."""
    from textual.binding import Binding

    from tui.app.actions import ACTIONS, FOCUS_BINDINGS
    from tui.app.screens.confirm import ConfirmScreen  # the override asks with it
    from tui.app.screens.tool_call import ToolCallScreen
    keys = [key.strip() for action in ACTIONS for key in action.key.split(",") if key]
    keys += [binding.key for binding in FOCUS_BINDINGS]
    keys += [key.strip() for binding in [*ToolCallScreen.BINDINGS, *ConfirmScreen.BINDINGS]
             if isinstance(binding, Binding) for key in binding.key.split(",")]
    tried = ["ctrl+r"] + [key for key in dict.fromkeys(keys) if key != "ctrl+r"]
    return [key for key in tried if key not in UNSENDABLE | LEFT_OUT]


def closed(tmux: Tmux) -> None:
    """Esc until no dialog is left (one waits a moment before it takes keys): whatever the key opened is closed;
    in the composer, Esc stops nothing."""
    def gone() -> bool:
        tmux.keys("Escape")
        time.sleep(0.4)  # (a key right behind Esc would be read with it as Alt+key)
        return "Tool call 1 of 1" not in tmux.screen()
    until(gone, 10, lambda: f"the dialog closed:\n{tmux.screen()}", poll=0.05)


def test_a_key_burst_as_a_reply_leaves_a_call_runs_nothing_and_moves_no_text(tmp_path, tmux):
    """At the moment a reply with a tool call ends, the user is typing the next question: a burst of text and one
    binding of the app, Ctrl+R first (it was Run in the dialog that opened by itself and took the keys in flight),
    then every other. The command's marker is never written, nothing is sent, and the composer keeps its text."""
    from tui.app.actions import BY_ID
    marker = tmp_path / "ran.txt"
    script = "import sys; open(sys.argv[1], 'w').write(sys.stdin.read())"
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([{"type": "function", "function": {"name": "delete_file", "parameters": {"type": "object"}},
                                  "command": [sys.executable, "-c", script, str(marker)]}]))  # not risky: it runs at once
    with ToolCallServer(DENY, hold=True) as server:
        tmux.start("--base-url", server.url, "--no-scan", "--tools", str(tools))
        tmux.wait_for(r"loaded 1 tools")
        for round_, key in enumerate(every_key_to_try()):
            typed = f"next question w{round_}"
            tmux.keys(f"ask {round_}", literal=True)
            tmux.keys("Enter")
            until(lambda asked=round_ + 1: len(server.requests) == asked, 20, lambda: f"the ask sent:\n{tmux.screen()}")
            tmux.wait_gone("the model calls")
            tmux.keys("next question", literal=True)
            server.release()
            tmux.wait_for(r"the model calls delete_file")
            tmux.keys(f" w{round_}", tmux_key(key))  # at once, in one write: the keys in flight
            time.sleep(1.0)  # longer than any dialog waits before it takes keys
            sent = len(server.requests)
            assert not marker.exists(), f"{key} ran the command:\n{tmux.screen()}"
            assert sent == round_ + 1, f"{key} sent the conversation:\n{tmux.screen()}"
            if key != BY_ID["answer_tool_calls"].key:  # the dialog opens only by its own key
                assert "Tool call 1 of 1" not in tmux.screen(), f"a dialog opened by itself ({key}):\n{tmux.screen()}"
            closed(tmux)
            if key == "tab":  # from the pane back to the composer (from the transcript, Esc went back)
                tmux.keys("BTab")
            if key not in EDITS_THE_COMPOSER:
                tmux.wait_for(re.escape(typed), timeout=5)
            tmux.keys("C-a", "C-k")  # the composer emptied for the next round (on one line: Ctrl+A, Ctrl+K)
            tmux.wait_gone(typed, timeout=5)
        assert not marker.exists() and len(server.requests) == len(every_key_to_try())


def test_keys_right_behind_the_key_that_opens_the_dialog_act_nowhere_in_it(tmp_path, tmux):
    """Ctrl+L and, in the same write, every key of the dialog (Run, Answer, Refuse, Override, a button pressed with
    Enter, Later): the dialog opens and takes none of them; the command has not run and nothing was sent."""
    marker = tmp_path / "ran.txt"
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([{"type": "function", "function": {"name": "delete_file", "parameters": {"type": "object"}},
                                  "command": [sys.executable, "-c", "import sys; open(sys.argv[1], 'w')", str(marker)]}]))
    with ToolCallServer(DENY) as server:
        tmux.start("--base-url", server.url, "--no-scan", "--tools", str(tools))
        tmux.wait_for(r"loaded 1 tools")
        tmux.keys("Delete it", literal=True)
        tmux.keys("Enter")
        tmux.wait_for(r"the model calls delete_file")
        tmux.keys("C-l", "F12", "typed", "C-s", "C-n", "C-g", "y", "Tab", "Enter", "Escape")
        time.sleep(1.5)
        assert not marker.exists() and len(server.requests) == 1
        screen = tmux.wait_for_all(r"Tool call 1 of 1: delete_file", r"Answer by hand")  # still open, not answered
        assert "typed" not in tmux.screen(), screen
        time.sleep(0.5)
        tmux.keys("F12")  # now seen: Run
        until(marker.exists, 20, lambda: f"the command to run:\n{tmux.screen()}")
