"""Run the command a user set for a tool: argv without a shell, the call's arguments on stdin.

The child gets this process's environment without the API keys (its output goes to the model and into the
session file), at most RUN_SECONDS, and its output (stdout and stderr together) is kept to OUTPUT_BYTES.
A key that still appears in the output is masked before the text goes anywhere."""

from __future__ import annotations

import asyncio
import os
import signal
from dataclasses import dataclass
from typing import Iterable

from tui.context.untrusted.redaction import MASK, Redactor

RUN_SECONDS = 30.0
OUTPUT_BYTES = 64 * 1024
KEY_VARIABLES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")


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
    """The keys this process holds: the child may read them anyway (/proc/PID/environ), so its output is cleaned."""
    return {os.environ[name] for name in {*KEY_VARIABLES, key_env} if len(os.environ.get(name, "")) >= 8}


def child_environment(key_env: str) -> dict[str, str]:
    hidden = {*KEY_VARIABLES, key_env}
    return {name: value for name, value in os.environ.items() if name not in hidden}


def _kill(process: asyncio.subprocess.Process) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)  # the whole group: a shell script's children too
    except (ProcessLookupError, PermissionError):
        pass


async def _read_capped(stream: asyncio.StreamReader) -> tuple[bytes, bool]:
    kept, cut = bytearray(), False
    while chunk := await stream.read(65536):
        room = OUTPUT_BYTES - len(kept)
        kept += chunk[:room]
        cut = cut or len(chunk) > room  # what is past the cap is read and thrown away: the child never blocks
    return bytes(kept), cut


def _without(text: str, secrets: Iterable[str]) -> str:
    """The project's redaction (each key as written, JSON-escaped, or cut off at its start, as `***`), and a key
    too plain for it to search free text for, replaced where it stands whole."""
    redactor = Redactor(secrets)
    text = redactor.text(text)
    for secret in redactor.unsearched:
        text = text.replace(secret, MASK)
    return text


async def run_tool(argv: tuple[str, ...], arguments: str, key_env: str, secrets: Iterable[str] = (),
                   seconds: float = RUN_SECONDS) -> ToolRun:
    try:
        process = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
            env=child_environment(key_env), start_new_session=True)
    except (OSError, ValueError) as exc:
        return ToolRun("", None, f"could not start {argv[0]}: {exc.strerror if isinstance(exc, OSError) else exc}")
    assert process.stdin is not None and process.stdout is not None
    try:
        process.stdin.write(arguments.encode("utf-8", "replace"))
        await process.stdin.drain()
    except (BrokenPipeError, ConnectionResetError):
        pass  # a command that reads nothing
    finally:
        process.stdin.close()
    try:
        raw, cut = await asyncio.wait_for(_read_capped(process.stdout), seconds)
        code: int | None = await asyncio.wait_for(process.wait(), seconds)
        note = f"output cut at {OUTPUT_BYTES} bytes" if cut else ""
    except TimeoutError:
        _kill(process)
        await process.wait()
        return ToolRun("", None, f"stopped after {seconds:g} s")
    except asyncio.CancelledError:
        _kill(process)
        raise
    return ToolRun(_without(raw.decode("utf-8", "replace"), secrets), code, note)
