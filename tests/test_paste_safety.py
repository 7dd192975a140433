"""Outside text that leaves ctxpane for another program is safe for that program (issue 25, pastejacking).

A reply carrying `ESC [ 2 0 1 ~` (the end of a bracketed paste) and then a command line, copied and pasted into
a shell, ran that command. Copies, curl commands and exported curl files now carry no control character; the
exact text is one palette command away, behind a confirmation.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import uuid

import pytest
from hypothesis import given, strategies as st

from app_helpers import settle
from test_app_copy import app_on_reply, select_reply, wait_notice
from tui.app.copying import clipboard_file
from tui.context.untrusted.visible import json_paste_safe, paste_safe
from tui.sessions.transfer import curl_command
from tap_helpers import upstream  # noqa: F401 - a fixture
from waiting import until

HOSTILE_REPLY = "Run this to check:\n\n    ls\x1b[201~; touch {marker}\n\nthat is all.\n"
UNSAFE = {chr(c) for c in range(0x20) if chr(c) not in "\t\n"} | {chr(c) for c in range(0x7f, 0xa0)} | set(
    "\u061c\u200e\u200f\u2028\u2029\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def test_every_control_character_but_tab_and_newline_becomes_a_stand_in():
    for char in sorted(UNSAFE):
        safe, changed = paste_safe(f"a{char}b\tc\n")
        assert char not in safe and changed == 1 and safe.startswith("a") and safe.endswith("b\tc\n"), repr(char)
    assert paste_safe("ls\x1b[201~; rm -rf ~") == ("ls␛[201~; rm -rf ~", 1)
    assert paste_safe("one\r\ntwo\rthree") == ("one\ntwo␍three", 2)
    assert paste_safe("plain text, tabs\tand\nnew lines, émoji 👍🏽") == ("plain text, tabs\tand\nnew lines, émoji 👍🏽", 0)


@given(st.text())
def test_nothing_unsafe_survives_and_safe_text_is_left_alone(text):
    safe, changed = paste_safe(text)
    assert not UNSAFE & set(safe)
    assert paste_safe(safe) == (safe, 0)
    assert (changed == 0) == (safe == text)


@given(st.recursive(st.text() | st.integers() | st.none(),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4)))
def test_json_made_paste_safe_keeps_its_value(value):
    text = json_paste_safe(json.dumps(value, ensure_ascii=False))
    assert not UNSAFE & set(text) and json.loads(text) == value


def test_a_curl_command_holds_no_control_character_and_runs_as_the_same_request():
    body = {"model": "m", "messages": [{"role": "user", "content": "csi \x9b201~ bidi \u202e del \x7f esc \x1b"}]}
    command = curl_command("http://127.0.0.1:8080/v1/chat/completions\x1b[2J", body, "OPENAI_API_KEY")
    assert not UNSAFE & set(command.replace("\\\n", ""))
    words = shlex.split(command.replace("\\\n", " "))
    assert json.loads(words[words.index("-d") + 1]) == body
    assert "␛[2J" in words[words.index("--url") + 1]  # a hostile URL keeps its stand-in, it is not silently repaired


def test_a_curl_command_cannot_be_steered_by_its_url_or_key_variable(tmp_path):
    marker = tmp_path / "ran"
    command = curl_command("-oX http://h/[1-1000000]", {"model": "m"}, f"X}}$(touch {marker})")
    words = shlex.split(command.replace("\\\n", " "))
    assert words[:3] == ["curl", "--globoff", "--url"] and words[3] == "-oX http://h/[1-1000000]"
    assert "$OPENAI_API_KEY" in command and "touch" not in command


async def test_copying_a_hostile_reply_puts_stand_ins_on_the_clipboard_and_says_so(tmp_path, monkeypatch):
    reply = HOSTILE_REPLY.format(marker="x")
    app = app_on_reply(tmp_path, monkeypatch, reply)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        select_reply(app)
        await pilot.press("c")
        assert app.clipboard == reply.replace("\x1b", "␛")
        notice = await wait_notice(pilot, app, "Copied assistant message #1")
        assert "1 control character made visible" in notice and "Copy exact text" in notice
        assert "\x1b" not in clipboard_file().read_text()
        await pilot.press("y")  # the code block holds the escape too
        assert app.clipboard.startswith("ls␛[201~")


async def test_copy_exact_asks_first_and_copies_the_bytes_only_on_yes(tmp_path, monkeypatch):
    reply = HOSTILE_REPLY.format(marker="x")
    app = app_on_reply(tmp_path, monkeypatch, reply)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await app.run_action("copy_exact")
        await settle(pilot, app)
        assert "bracketed paste" in str(app.screen.question)
        await pilot.press("n")
        await settle(pilot, app)
        assert app.clipboard == ""
        await app.run_action("copy_exact")
        await settle(pilot, app)
        await pilot.press("y")
        await settle(pilot, app)
        assert app.clipboard == reply
        await wait_notice(pilot, app, "exactly, control characters included")


class BracketedPasteShell:
    """An interactive bash in tmux (bracketed paste on, as readline sets it by default), pasted into as a
    terminal pastes: `paste-buffer -p` wraps the text in ESC[200~ … ESC[201~ for an application that asked."""

    def __init__(self, home):
        self.name = f"paste-{uuid.uuid4().hex[:8]}"
        rc = home / "bashrc"
        rc.write_text("bind 'set enable-bracketed-paste on'\nPS1='READY$ '\n")
        subprocess.run(["tmux", "-L", self.name, "new-session", "-d", "-s", self.name, "-x", "120", "-y", "30",
                        f"env -i HOME={home} TERM=xterm-256color bash --rcfile {rc} -i"], check=True)
        self.wait_for_prompt()

    def screen(self) -> str:
        return subprocess.run(["tmux", "-L", self.name, "capture-pane", "-p", "-t", self.name],
                              capture_output=True, text=True).stdout

    def wait_for(self, text: str, timeout: float = 10) -> None:
        until(lambda: text in self.screen(), timeout, lambda: f"{text!r} on the screen:\n{self.screen()}", poll=0.05)

    def wait_for_prompt(self, timeout: float = 10) -> None:
        """Until the prompt stands alone on the last line: readline has asked for bracketed paste by then."""
        until(lambda: self.screen().rstrip().splitlines()[-1:] == ["READY$"], timeout,
              lambda: f"the prompt:\n{self.screen()}", poll=0.05)

    def paste(self, text: str, path) -> None:
        path.write_text(text, encoding="utf-8")
        subprocess.run(["tmux", "-L", self.name, "load-buffer", "-b", "clip", str(path)], check=True)
        subprocess.run(["tmux", "-L", self.name, "paste-buffer", "-p", "-b", "clip", "-t", self.name], check=True)

    def type_after(self) -> None:
        """Type a word after the paste and wait until the shell shows it: bash reads its input in order, and
        runs a command before it reads on, so by then whatever the paste made it run has run."""
        sentinel = f"#typed-{uuid.uuid4().hex[:8]}"
        subprocess.run(["tmux", "-L", self.name, "send-keys", "-t", self.name, "-l", sentinel], check=True)
        self.wait_for(sentinel)

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.name, "kill-server"], capture_output=True)


@pytest.fixture()
def shells(tmp_path):
    started = []

    def start(name: str) -> BracketedPasteShell:
        home = tmp_path / name
        home.mkdir()
        started.append(BracketedPasteShell(home))
        return started[-1]
    yield start
    for shell in started:
        shell.close()


def hostile_reply(marker) -> str:
    return HOSTILE_REPLY.format(marker=marker) + "\x9b201~; touch " + str(marker) + "\n"


async def test_a_copied_reply_pasted_into_a_bracketed_paste_shell_runs_nothing(tmp_path, monkeypatch, shells):
    # The control: the raw reply pasted into such a shell runs the command (so the test can fail).
    ran_raw = tmp_path / "raw-pasted-and-ran"
    raw = shells("raw")
    raw.paste(hostile_reply(ran_raw), tmp_path / "raw.txt")
    until(ran_raw.exists, 10, lambda: f"the raw paste to run the command (it should):\n{raw.screen()}")
    marker = tmp_path / "copy-pasted-and-ran"
    app = app_on_reply(tmp_path, monkeypatch, hostile_reply(marker))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await app.run_action("copy_reply")
        copied = app.clipboard
    safe = shells("copied")
    safe.paste(copied, tmp_path / "copied.txt")
    safe.type_after()
    assert not marker.exists(), safe.screen()
    assert "ls␛[201~; touch" in safe.screen()  # the paste arrived, as text on the command line


async def test_ctrl_c_in_an_editor_copies_the_selection_made_safe(tmp_path, monkeypatch):
    """Found by review: Textual's TextArea copies its selection with App.copy_to_clipboard, past the Copier."""
    from tui.app.pane.request_tab import RequestView
    reply = "csi \x9b201~ esc \x1b[201~ bidi \u202e end"
    app = app_on_reply(tmp_path, monkeypatch, reply)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, app)
        app.query_one("#tabs").active = "request"
        await settle(pilot, app)
        area = app.query_one(RequestView)
        area.focus()
        area.select_all()
        await pilot.press("ctrl+c")
        await settle(pilot, app)
        assert app.clipboard and not UNSAFE & set(app.clipboard)
        app.copy_to_clipboard(reply)  # any other widget's copy goes the same way
        assert app.clipboard == paste_safe(reply)[0]


def test_a_curl_command_for_a_large_body_runs_and_sends_that_body(upstream, tmp_path):
    """Found by review: a body over ~96 KB (an image) was one -d argument, over Linux's 128 KiB per argument:
    the copied command failed with 'Argument list too long'."""
    import hashlib
    import shutil
    if shutil.which("curl") is None:
        pytest.skip("curl is not installed")
    body = {"model": "m", "messages": [{"role": "user", "content": "x" * 300_000 + " 'quoted' $(not run) `no`"}]}
    command = curl_command(f"{upstream.url}/echo/v1/chat/completions", body, "OPENAI_API_KEY")
    script = tmp_path / "copied.sh"  # as pasted into a shell: the command is read, not passed as one argument
    script.write_text(command + "\n")
    result = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=60,
                            env={"PATH": "/usr/bin:/bin", "OPENAI_API_KEY": "k"})
    assert result.returncode == 0, result.stderr[-500:]
    seen = json.loads(result.stdout)
    from tui.context.request_bytes import request_bytes
    assert seen["sha256"] == hashlib.sha256(request_bytes(body) + b"\n").hexdigest()
