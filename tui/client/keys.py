"""API keys held inside the process, out of its environment.

A command run for a tool is a child of ctxpane; a child can read its parent's environment (`/proc/PPID/environ`,
which shows the environment block the process started with, whatever `os.environ` says later). So the app, as it
starts, takes every key out of its environment: the value is kept here, `os.environ` no longer has it, and the bytes
of the start-up environment block are overwritten. The client reads a key through `key_named`; what is held is also
what output cleaning looks for (`held_keys`).
"""

from __future__ import annotations

import ctypes
import os
import sys
from typing import Iterable

from tui.context.untrusted.redaction import credential_name

KEY_VARIABLES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")  # read by ctxpane whatever the settings say
NOT_KEYS = frozenset({"PWD", "OLDPWD", "SSH_AUTH_SOCK"})  # names with a credential's word that hold none
WHERE_NOT_WHAT = ("_DIR", "_FILE", "_PATH", "_SOCK", "_URL")  # PASSWORD_STORE_DIR names a place, not a key
_held: dict[str, str] = {}
_withdrawing = False  # set once the app withdrew the keys: a variable read later is withdrawn as it is read


def key_named(name: str) -> str | None:
    """The value of the key variable `name`: from the environment, or held here once it was taken out of it (in
    the app, a variable first named later, by config.toml or the settings screen, is taken out as it is read)."""
    if _withdrawing and os.environ.get(name):
        _withdraw(name)
    return os.environ.get(name) or _held.get(name) or None


def held_keys(names: Iterable[str] = ()) -> set[str]:
    """Every key this process knows of: those held, and `names` and the usual key variables still in the
    environment (a process that never withdrew them, such as a test)."""
    found = {value for value in _held.values() if value}
    found.update(os.environ[name] for name in {*KEY_VARIABLES, *names} if os.environ.get(name))
    return found


def secret_variables(extra: Iterable[str] = ()) -> list[str]:
    """The environment's variables that hold a key: the usual ones, `extra` (a --api-key-env), and every variable
    whose name says it carries a credential (GITHUB_TOKEN, AWS_SECRET_ACCESS_KEY, MY_LLM_KEY)."""
    wanted = {*KEY_VARIABLES, *extra}
    return sorted(name for name in os.environ if name in wanted or credential_name(name) and a_key(name))


def a_key(name: str) -> bool:
    """A credential-named variable that holds a key, not the place of one (a folder, a file, an address)."""
    value = os.environ.get(name, "")
    return name not in NOT_KEYS and not name.endswith(WHERE_NOT_WHAT) and not value.startswith(("/", "~", "."))


def withdraw_keys(extra: Iterable[str] = ()) -> list[str]:
    """Take every key out of the environment into this module (see the module's text); returns their names."""
    global _withdrawing
    _withdrawing = True
    names = secret_variables(extra)
    for name in names:
        _withdraw(name)
    return names


def _withdraw(name: str) -> None:
    _held[name] = os.environ[name]
    _overwrite_in_environment_block(name)
    del os.environ[name]


def keep_memory_private() -> bool:
    """Make this process undumpable (Linux's PR_SET_DUMPABLE 0): another process of the same user, such as a tool's
    command, can then read neither its memory (/proc/PID/mem), where the keys are held, nor its environ or maps.
    Root's processes still can. Returns whether it took effect."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        made_private: int = libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE to 0
        dumpable: int = libc.prctl(3, 0, 0, 0, 0)  # PR_GET_DUMPABLE
        return made_private == 0 and dumpable == 0
    except (OSError, AttributeError):
        return False


def _overwrite_in_environment_block(name: str) -> None:
    """Zero the value of `name` in the block `/proc/PID/environ` shows (the environment the process started with,
    between its kernel-given bounds) and where the C library's environment points now. Where neither can be
    reached (not Linux), the variable is still taken out of os.environ."""
    if not sys.platform.startswith("linux"):
        return
    prefix = name.encode() + b"="
    bounds = _environment_block_bounds()
    if bounds is not None:
        start, end = bounds
        block = ctypes.string_at(start, end - start)
        at = 0
        while (found := block.find(prefix, at)) != -1:
            if found == 0 or block[found - 1] == 0:  # the start of an entry, not the middle of a value
                value_end = block.find(b"\0", found)
                value_end = len(block) if value_end == -1 else value_end
                ctypes.memset(start + found + len(prefix), 0, value_end - found - len(prefix))
            at = found + len(prefix)
    for address in _c_environment_entries():
        entry = ctypes.string_at(address)
        if entry.startswith(prefix):
            ctypes.memset(address + len(prefix), 0, len(entry) - len(prefix))


def _environment_block_bounds() -> tuple[int, int] | None:
    """env_start and env_end of /proc/self/stat (its 50th and 51st fields, counted after the command's name)."""
    try:
        fields = open("/proc/self/stat", "rb").read().rsplit(b")", 1)[1].split()
        start, end = int(fields[47]), int(fields[48])  # fields 50 and 51; the split starts at field 3
    except (OSError, IndexError, ValueError):
        return None
    return (start, end) if 0 < start < end else None


def _c_environment_entries() -> list[int]:
    try:
        environ = ctypes.POINTER(ctypes.c_void_p).in_dll(ctypes.CDLL(None), "environ")
    except (OSError, ValueError):
        return []
    entries, index = [], 0
    while (address := environ[index]) is not None:
        entries.append(address)
        index += 1
    return entries
