"""Alt+Enter in a real terminal (tmux): it arrives as ESC CR, which Textual read as a plain Enter, so the
message was sent (issue 19). Now it adds a line, and Esc alone is still Esc."""

from __future__ import annotations

from tmux_driver import Tmux


def test_alt_enter_adds_a_line_in_tmux(tmp_path):
    tmux = Tmux(tmp_path, width=120, height=30)
    try:
        tmux.start("--no-scan")
        tmux.wait_for(r"the pane works on what you type")
        tmux.keys("line one", literal=True)
        tmux.wait_for(r"line one<\|im_end\|>")
        tmux.keys("M-Enter")
        tmux.keys("line two", literal=True)
        tmux.wait_for(r"line two<\|im_end\|>")  # the draft in the pane: one message, two lines
        screen = tmux.screen()
        assert "▊ line one" in screen and "▊ line two" in screen, screen
        assert "start with --base-url URL to send" not in screen  # nothing was sent (offline: it would say so)
    finally:
        tmux.stop()
