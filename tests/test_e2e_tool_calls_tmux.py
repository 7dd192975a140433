"""Tools in a real terminal (tmux): a tool call goes through the isolated review (a deny, shown beside the call),
the explicit override, the command, and a fenced tool result; the reviewer's request is in the Review tab."""

from __future__ import annotations

import json
import sys

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
        tmux.wait_for_all(r"Tool call 1 of 1: delete_file", r"reviewer: DENY", r"Run is off: the reviewer denied it")
        tmux.keys("C-r")  # Run, while denied: nothing happens
        tmux.wait_for(r"Tool call 1 of 1")
        assert not marker.exists()
        tmux.keys("C-g")
        tmux.wait_for(r"Run its command anyway\?")
        tmux.keys("y")
        until(marker.exists, 20, lambda: f"the command to run:\n{tmux.screen()}")
        tmux.wait_for(r"The tool said: <untrusted")  # the scripted reply echoes the fenced result it was sent
        assert server.requests[-1]["messages"][-1]["role"] == "tool"
        from tui.app.pane.pane import TABS
        tmux.keys(*["C-t"] * TABS.index("review"))  # from the Document tab to the Review tab
        tmux.wait_for_all(r"review of delete_file", r"its own request: \d+ tokens")
