"""Run the command a user set for a tool: argv without a shell, the call's arguments on stdin.

The child's output goes to the model and into the session file, so it gets no key to print: an environment built
from an allow-list (CHILD_VARIABLES), and a parent whose own environment no longer holds a key (the app withdraws
them as it starts: tui/client/keys.py). Writing the arguments, running and reading share one deadline
(RUN_SECONDS); past it, and on a refusal or the app's end, the child's whole process group is killed. Arguments over
ARGUMENT_BYTES are refused before anything starts; the output (stdout and stderr together) is kept to OUTPUT_BYTES,
and a key that still appears in it, whole or in fragments, is masked before the text goes anywhere.

The run ends when the command does: what it left in its group is killed then, so a child sent to the background
that inherited the output cannot hold the run open until the deadline. A process the command put in a session of its
own (setsid, a daemon) is beyond the group's reach and outlives the run: the command is the user's own, and only its
arguments are the model's; its hold on the output is let go after DRAIN_SECONDS, and the result says so."""

from __future__ import annotations

import asyncio
import atexit
import os
import signal
from dataclasses import dataclass
from typing import Iterable

from tui.client.keys import held_keys
from tui.context.tools.calls import arguments_problem
from tui.context.untrusted.redaction import known_secrets_masked

RUN_SECONDS = 30.0
OUTPUT_BYTES = 64 * 1024
EXIT_POLL = 0.05  # seconds between two looks at whether the command ended while its output is still open
DRAIN_SECONDS = 2.0  # how long the output is read after the command ended and its group was killed
ARGUMENT_BYTES = 256 * 1024  # far past what a model writes as a call's arguments; more would be a flood
# what a command may need of the environment to run: where programs are, the user's home and locale, a terminal's
# kind, a place for temporary files. Nothing else: a variable a user set may hold a token of any name.
CHILD_VARIABLES = frozenset({"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "TZ", "TMPDIR",
                             "PWD"})
CHILD_PREFIXES = ("LC_",)
_running: set[int] = set()  # the process groups of the commands running now: killed when the process ends


@dataclass(frozen=True)
class ToolRun:
    output: str
    code: int | None  # None: it did not finish (timed out, or could not start)
    note: str = ""  # what happened beside the output: timed out, cut, could not start

    def result_text(self) -> str:
        said = [self.note] if self.note else []
        if self.code not in (0, None):
            said.append(f"exit code {self.code}")
        return self.output + (f"\n[{'; '.join(said)}]" if said else "")


def secrets_of_environment(key_env: str) -> set[str]:
    """Every key this process knows of, held or still in its environment: what the output is cleaned of."""
    return {key for key in held_keys([key_env]) if len(key) >= 8}


def child_environment() -> dict[str, str]:
    return {name: value for name, value in os.environ.items()
            if name in CHILD_VARIABLES or name.startswith(CHILD_PREFIXES)}


def _kill(process: asyncio.subprocess.Process) -> None:
    _kill_group(process.pid)


def _kill_group(group: int) -> None:
    try:
        os.killpg(group, signal.SIGKILL)  # the whole group: a shell script's children too
    except (ProcessLookupError, PermissionError):
        pass


@atexit.register
def _kill_what_still_runs() -> None:
    """The app ended (quit, or an error) while a command ran: the command does not outlive it."""
    for group in list(_running):
        _kill_group(group)


def stop_commands_on_signals() -> None:
    """A hang-up (the terminal closed) or a TERM ends the app without atexit: kill the commands first, then end as
    the signal would have."""
    def stop(number: int, _frame: object) -> None:
        _kill_what_still_runs()
        signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)

    for number in (signal.SIGHUP, signal.SIGTERM):
        if signal.getsignal(number) in (signal.SIG_DFL, None):
            signal.signal(number, stop)


async def _read_capped(stream: asyncio.StreamReader, kept: bytearray) -> bool:
    cut = False
    while chunk := await stream.read(65536):
        room = OUTPUT_BYTES - len(kept)
        kept += chunk[:room]
        cut = cut or len(chunk) > room  # what is past the cap is read and thrown away: the child never blocks
    return cut


def _without(text: str, secrets: Iterable[str]) -> str:
    """The output with every key masked, whole, cut off or in fragments (the prompt history masks the same way)."""
    return known_secrets_masked(text, secrets)


async def run_tool(argv: tuple[str, ...], arguments: str, key_env: str, secrets: Iterable[str] = (),
                   seconds: float = RUN_SECONDS) -> ToolRun:
    given = arguments.encode("utf-8", "replace")
    if len(given) > ARGUMENT_BYTES:
        return ToolRun("", None, f"not run: its arguments ({len(given):,} bytes) are over the "
                                 f"{ARGUMENT_BYTES // 1024} KiB a command is given")
    problem = arguments_problem(arguments)  # the gate refuses these first; no caller may run one all the same
    if problem:
        return ToolRun("", None, f"not run: {problem}")
    try:
        process = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
            env=child_environment(), start_new_session=True)
    except (OSError, ValueError) as exc:
        return ToolRun("", None, f"could not start {argv[0]}: {exc.strerror if isinstance(exc, OSError) else exc}")
    _running.add(process.pid)
    output = bytearray()  # what it printed, kept if the deadline cuts it short
    try:
        async with asyncio.timeout(seconds):  # one deadline for writing, running and reading
            cut, code, held = await _converse(process, given, output)
    except TimeoutError:
        _kill(process)
        await process.wait()
        return ToolRun(_without(output.decode("utf-8", "replace"), [*secrets, *secrets_of_environment(key_env)]),
                       None, f"stopped after {seconds:g} s")
    except asyncio.CancelledError:  # refused, or the app ends: the command goes with it
        _kill(process)
        raise
    finally:
        _running.discard(process.pid)
    note = "; ".join(said for said in (f"output cut at {OUTPUT_BYTES} bytes" if cut else "", held) if said)
    return ToolRun(_without(output.decode("utf-8", "replace"), [*secrets, *secrets_of_environment(key_env)]), code,
                   note)


async def _converse(process: asyncio.subprocess.Process, given: bytes, output: bytearray) -> tuple[bool, int, str]:
    """Write the arguments while reading the output into `output` (a command that writes before it reads, or never
    reads, must not block the other side) until the command ends. Then what it left in its group is killed, and
    the output read to its end; a process beyond the group's reach (a session of its own) that still holds the
    output open is not waited for. Returns (cut, exit code, note)."""
    assert process.stdin is not None and process.stdout is not None
    writing = asyncio.ensure_future(_write_arguments(process.stdin, given))
    reading = asyncio.ensure_future(_read_capped(process.stdout, output))
    note = ""
    try:
        while process.returncode is None and not reading.done():  # (wait() would also wait for the output's end)
            await asyncio.wait([reading], timeout=EXIT_POLL)
        code = await process.wait() if reading.done() else process.returncode
        _kill(process)  # a child left in the background ends with it, and so does its hold on the output
        try:
            cut = await asyncio.wait_for(asyncio.shield(reading), DRAIN_SECONDS)
        except TimeoutError:
            cut, note = False, "its output is still held open by a process it started: not read further"
            transport = getattr(process, "_transport", None)  # its pipe is let go now, not when that process ends
            if transport is not None:
                transport.close()
    finally:
        writing.cancel()
        reading.cancel()
    assert code is not None
    return cut, code, note


async def _write_arguments(stdin: asyncio.StreamWriter, given: bytes) -> None:
    try:
        stdin.write(given)
        await stdin.drain()
    except (BrokenPipeError, ConnectionResetError):
        pass  # a command that reads nothing
    finally:
        stdin.close()
