"""A tool's command can neither reach the API key nor outlive its deadline (issue 40, items 2 and 3).

Before: the child got ctxpane's environment less two names, and could read the key anyway from
/proc/<parent>/environ; output cleaning found the key only whole or by its first 10 characters; with arguments
over ~128 KiB a command that ignores its input blocked the write before the 30 s limit started, for ever.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conftest import ROOT
from tui.context.untrusted.redaction import fragments_masked
from tui.controller.tool_runner import ARGUMENT_BYTES, child_environment, run_tool
from waiting import until

pytestmark = pytest.mark.process  # the commands run as child processes

KEY = "sk-proj-Qm7Zt2Lx9Wc4Rb8Nv1Hy6Gd3Kp5Sa0Ue"


def forms_of(key: str) -> dict[str, str]:
    """The key as a hostile command would print it to get it past a filter."""
    return {"whole": key, "folded": key[:17] + "\n" + key[17:], "from an offset": key[9:],
            "in pieces": " ".join(key[at:at + 9] for at in range(0, len(key), 9)),
            "reversed": key[::-1], "spaced": " ".join(key), "hex": key.encode().hex(),
            "base64": base64.b64encode(key.encode()).decode(),
            "base64 after a byte": base64.b64encode(b"x" + key.encode()).decode(),
            "json escaped": json.dumps(key.replace("-", "\\-"))}


def secret_body_pieces(text: str, key: str, run: int = 8) -> list[str]:
    body = key.removeprefix("sk-proj-")
    compact = "".join(text.split())
    return [body[at:at + run] for at in range(len(body) - run + 1) if body[at:at + run] in compact]


@pytest.mark.parametrize("form", list(forms_of(KEY)))
def test_every_form_of_a_key_in_a_commands_output_is_masked(form):
    printed = f"result: {forms_of(KEY)[form]} end"
    cleaned = fragments_masked(printed, [KEY])
    assert "***" in cleaned and cleaned.startswith("result: ") and cleaned.endswith(" end")
    for shown in (cleaned, cleaned[::-1]):
        assert not secret_body_pieces(shown, KEY), cleaned
    assert KEY.encode().hex() not in cleaned and base64.b64encode(KEY.encode()).decode()[4:20] not in cleaned


def test_text_without_the_key_is_kept_as_it_is():
    text = "commit 1a2b3c4d5e6f7a8b, sk-proj- is a prefix, Qm7Z alone is short\n" * 3
    assert fragments_masked(text, [KEY]) == text


HOSTILE = textwrap.dedent("""
    import base64, os, sys
    found = []
    for path in (f"/proc/{os.getppid()}/environ", "/proc/self/environ"):
        try:
            found.append(open(path, "rb").read().decode("latin-1"))
        except OSError:
            pass
    found.append(repr(dict(os.environ)))
    print("\\n".join(found))
""")

PARENT = textwrap.dedent("""
    import asyncio, json, os, sys
    sys.path.insert(0, sys.argv[1])
    from tui.client.keys import withdraw_keys
    from tui.controller.tool_runner import run_tool
    withdraw_keys([])
    done = asyncio.run(run_tool((sys.executable, "-c", sys.argv[2]), "{}", "OPENAI_API_KEY"))
    print(json.dumps({"output": done.output, "environ": open("/proc/self/environ", "rb").read().decode("latin-1")}))
""")


def test_a_command_finds_no_key_in_its_own_environment_nor_in_its_parents():
    env = {**os.environ, "OPENAI_API_KEY": KEY, "ANTHROPIC_API_KEY": KEY[::-1] + "x", "MY_SERVICE_TOKEN": "tok-" + KEY}
    done = subprocess.run([sys.executable, "-c", PARENT, str(ROOT), HOSTILE], capture_output=True, text=True,
                          env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert "PATH" in report["output"]  # the command ran and printed what it found
    for where in ("output", "environ"):  # what the child printed; what /proc shows of the parent afterwards
        assert not secret_body_pieces(report[where], KEY), where
        assert KEY[::-1] not in report[where] and "MY_SERVICE_TOKEN=tok" not in report[where]


def test_the_child_environment_is_an_allow_list(monkeypatch):
    monkeypatch.setenv("SOME_SETTING", "x")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    given = child_environment()
    assert "PATH" in given and "SOME_SETTING" not in given and "OPENAI_API_KEY" not in given


def group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True


IGNORES_INPUT = "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpgrp())); time.sleep(60)"


async def test_a_command_that_ignores_large_arguments_is_stopped_at_the_deadline(tmp_path):
    marker = tmp_path / "group"
    arguments = json.dumps({"text": "x" * (ARGUMENT_BYTES - 1000)})  # far past a pipe's buffer, under the bound
    done = await asyncio.wait_for(run_tool((sys.executable, "-c", IGNORES_INPUT, str(marker)), arguments,
                                           "OPENAI_API_KEY", seconds=3), 20)
    assert done.code is None and "stopped after 3 s" in done.note
    group = int(marker.read_text())
    until(lambda: not group_alive(group), 10, "the command's process group to be gone")


async def test_arguments_over_the_bound_are_refused_before_anything_runs(tmp_path):
    marker = tmp_path / "ran"
    arguments = json.dumps({"text": "x" * ARGUMENT_BYTES})
    done = await run_tool((sys.executable, "-c", IGNORES_INPUT, str(marker)), arguments, "OPENAI_API_KEY")
    assert done.code is None and done.note.startswith("not run: its arguments")
    assert not marker.exists()


async def test_a_refused_command_is_killed_with_its_children(tmp_path):
    marker = tmp_path / "group"
    spawning = f"import subprocess, sys; subprocess.Popen([sys.executable, '-c', {IGNORES_INPUT!r}, sys.argv[1]]).wait()"
    running = asyncio.ensure_future(run_tool((sys.executable, "-c", spawning, str(marker)), "{}", "OPENAI_API_KEY"))
    while not marker.exists() or not marker.read_text():
        await asyncio.sleep(0.02)
    running.cancel()  # what refusing a running call does
    with pytest.raises(asyncio.CancelledError):
        await running
    group = int(marker.read_text())  # the grandchild's group: the command's own
    until(lambda: not group_alive(group), 10, "the command and its child to be gone")


ENDS_WHILE_RUNNING = textwrap.dedent("""
    import asyncio, sys
    sys.path.insert(0, sys.argv[1])
    from tui.controller.tool_runner import run_tool
    loop = asyncio.new_event_loop()
    loop.create_task(run_tool((sys.executable, "-c", sys.argv[2], sys.argv[3]), "{}", "OPENAI_API_KEY"))
    loop.run_until_complete(asyncio.sleep(1.5))
    print("leaving", flush=True)  # the loop is left with the command still running, as an app that ends
""")


def test_a_command_does_not_outlive_the_process_that_ran_it(tmp_path):
    marker = tmp_path / "group"
    done = subprocess.run([sys.executable, "-c", ENDS_WHILE_RUNNING, str(ROOT), IGNORES_INPUT, str(marker)],
                          capture_output=True, text=True, timeout=60)
    assert "leaving" in done.stdout, done.stderr
    group = int(Path(marker).read_text())
    until(lambda: not group_alive(group), 10, "the command to end with the process that ran it")


# --- a second attack (each failed before its fix) ------------------------------------------------------------------

def test_the_keys_last_characters_in_base64_and_pieces_split_by_invisible_characters_are_masked():
    tail = base64.b64encode(KEY[-8:].encode()).decode()
    assert tail[:8] not in fragments_masked(f"tail: {tail}", [KEY])
    hidden = "\u200b".join(KEY)
    assert not secret_body_pieces(fragments_masked(hidden, [KEY]).replace("\u200b", ""), KEY)


def test_a_placeholder_key_or_a_folder_is_no_reason_to_mask_ordinary_words():
    from tui.controller.tool_runner import _without

    assert _without("exit 0x1f; max index; I need anything here", ["x", "anything"]) == \
        "exit 0x1f; max index; I need anything here"
    assert _without("cwd is /home/user/project", ["/home/user/.password-store"]) == "cwd is /home/user/project"


def test_a_variable_that_names_the_place_of_a_key_is_left_in_the_environment(monkeypatch):
    from tui.client.keys import secret_variables

    monkeypatch.setenv("PASSWORD_STORE_DIR", "/home/user/.password-store")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/home/user/.aws/credentials")
    monkeypatch.setenv("GROQ_API_KEY", "gsk_" + KEY[8:])
    found = secret_variables()
    assert "GROQ_API_KEY" in found and "PASSWORD_STORE_DIR" not in found and "AWS_SHARED_CREDENTIALS_FILE" not in found


LATER_NAMED = textwrap.dedent("""
    import os, sys
    sys.path.insert(0, sys.argv[1])
    from tui.client.keys import key_named, keep_memory_private, withdraw_keys
    withdraw_keys([])
    assert "LLMKEY" in os.environ  # no credential word in its name: left until something names it
    assert key_named("LLMKEY") == "plain-value-of-the-key-0123456789"
    print("LLMKEY" in os.environ, b"plain-value" in open("/proc/self/environ", "rb").read(), keep_memory_private())
""")


def test_a_key_variable_named_later_is_withdrawn_as_it_is_read_and_the_memory_is_kept_private():
    env = {**os.environ, "LLMKEY": "plain-value-of-the-key-0123456789"}
    done = subprocess.run([sys.executable, "-c", LATER_NAMED, str(ROOT)], capture_output=True, text=True, env=env,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "False", "True"]


async def test_what_a_command_printed_before_its_deadline_is_kept(tmp_path):
    talks = "import sys, time; print('first words', flush=True); time.sleep(60)"
    done = await run_tool((sys.executable, "-c", talks), "{}", "OPENAI_API_KEY", seconds=2)
    assert done.code is None and "first words" in done.output and "stopped after 2 s" in done.note


async def test_a_child_a_command_left_in_the_background_ends_with_it(tmp_path):
    marker = tmp_path / "group"
    leaves = (f"import os, subprocess, sys, time; subprocess.Popen([sys.executable, '-c', {IGNORES_INPUT!r}, "
              "sys.argv[1]], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
              "while not (os.path.exists(sys.argv[1]) and open(sys.argv[1]).read()): time.sleep(0.02)\n"
              "print('done')")
    done = await run_tool((sys.executable, "-c", leaves, str(marker)), "{}", "OPENAI_API_KEY")
    assert done.code == 0 and "done" in done.output
    until(lambda: marker.exists() and marker.read_text(), 10, "the background child to start")
    group = int(marker.read_text())
    until(lambda: not group_alive(group), 10, "the background child to end with its command")



async def test_a_background_child_that_keeps_the_output_open_neither_holds_the_run_to_its_deadline_nor_outlives_it(
        tmp_path):
    """`server & echo started`: the child inherits the command's output. The run ends when the command does (its
    exit code kept), not at the deadline, and the child ends with it."""
    marker = tmp_path / "group"
    leaves = (f"import os, subprocess, sys, time; subprocess.Popen([sys.executable, '-c', {IGNORES_INPUT!r}, "
              "sys.argv[1]])\n"
              "while not (os.path.exists(sys.argv[1]) and open(sys.argv[1]).read()): time.sleep(0.02)\n"
              "print('started', flush=True); sys.exit(3)")
    started = time.monotonic()
    done = await run_tool((sys.executable, "-c", leaves, str(marker)), "{}", "OPENAI_API_KEY", seconds=20)
    assert time.monotonic() - started < 10, done
    assert done.code == 3 and "started" in done.output and "stopped" not in done.note, done
    group = int(marker.read_text())
    until(lambda: not group_alive(group), 10, "the background child to end with its command")


async def test_a_child_in_a_session_of_its_own_holding_the_output_does_not_hold_the_run_to_its_deadline(tmp_path):
    """A child that left the command's process group (setsid) is out of reach of the group's kill (a daemon the
    user's own command starts is the user's); it cannot keep the run waiting for its output, though."""
    daemon = "import time; time.sleep(30)"
    leaves = (f"import subprocess, sys; p = subprocess.Popen([sys.executable, '-c', {daemon!r}], start_new_session=True)"
              "; print(p.pid, flush=True)")
    started = time.monotonic()
    done = await run_tool((sys.executable, "-c", leaves), "{}", "OPENAI_API_KEY", seconds=20)
    try:
        assert time.monotonic() - started < 10, done
        assert done.code == 0 and "still held" in done.note, done
    finally:
        os.kill(int(done.output.split()[0]), signal.SIGKILL)

HANGS_UP = textwrap.dedent("""
    import asyncio, os, signal, sys
    sys.path.insert(0, sys.argv[1])
    from tui.controller.tool_runner import run_tool, stop_commands_on_signals
    stop_commands_on_signals()
    async def main():
        asyncio.ensure_future(run_tool((sys.executable, "-c", sys.argv[2], sys.argv[3]), "{}", "OPENAI_API_KEY"))
        await asyncio.sleep(1.5)
        os.kill(os.getpid(), signal.SIGHUP)  # the terminal closed
        await asyncio.sleep(10)
    asyncio.run(main())
""")


def test_a_hang_up_ends_the_commands_with_the_app(tmp_path):
    marker = tmp_path / "group"
    done = subprocess.run([sys.executable, "-c", HANGS_UP, str(ROOT), IGNORES_INPUT, str(marker)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == -1, (done.returncode, done.stderr)  # ended by the hang-up, as without the handler
    group = int(marker.read_text())
    until(lambda: not group_alive(group), 10, "the command to end with the app that hung up")


def test_a_short_key_of_letters_and_digits_is_masked_where_it_stands_whole():
    """A local server's key is often short (`llama-server --api-key localkey99`): not a word, so masked whole."""
    from tui.controller.tool_runner import _without

    assert _without("use localkey99 now", ["localkey99"]) == "use *** now"
    assert _without("I need anything here", ["anything"]) == "I need anything here"
