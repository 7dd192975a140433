"""The real-client harness's rig: real clients -> `ctxpane tap` -> the tool shim -> the real llama.cpp server.

The tiny model never calls tools, so ../shared/server/tool-shim.py sits between the tap and the server: it answers
the first SHIM_CALLS requests of a conversation that offer tools with a scripted tool call (carrying the server's
real prompt count) and forwards everything else, so each client runs a real tool loop. The shim logs one line per
request it answered; that log is what the upstream saw, held against what the tap recorded.

What a run is judged by (`Findings`), all read from the tap's own files and `ctxpane replay --check`:
- every request the upstream saw is a request recorded;
- one conversation (one session file) per client session;
- every recorded count (`received.sent`) equal to the server's (`received.received`);
- `replay --check` passes for every file;
- every reply recorded whole (the harness stops the tap only once every client run has ended, so a reply marked
  incomplete is one the client got whole);
- where the client compacts, the conversation shows the client's cut;
- the client reached nothing past loopback (its connections traced under strace; its proxy variables name a
  refusing proxy that notes which outside hosts it asked for).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pytest

from conftest import REQUIRE_SHARED, ROOT, SHARED, free_port, need_shared
from waiting import stopped, until

CLIENTS_DIR = Path(os.environ.get("CTXPANE_CLIENTS_DIR")
                   or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ctxpane-clients")
PINS = ROOT / "tests" / "clients" / "pins.txt"
SCRIPTS = ROOT / "tests" / "clients"
RESULTS = CLIENTS_DIR / "results"  # one row per client run, read by tests/clients/table.py
# the APIs whose requests the tap renders and counts: what a shim log line's path says
API_OF_PATH = {"/v1/chat/completions": "chat", "/v1/messages": "messages", "/v1/responses": "responses"}
SHIM_LINE = re.compile(r"^\S+ (?:(chat|messages|responses) tool results=\d+: scripted|POST (/v1/[^?\s]*)\S* forwarded)")
# a dummy key each client is given: it must reach no file of the tap's (the tap masks credentials)
DUMMY_KEY = "sk-harness-dummy-key-0123456789abcdef"


def no_internet(proxy: str) -> dict[str, str]:
    """Only loopback: a client that honours the proxy variables asks `proxy` (the rig's refusing proxy, which
    notes the host and refuses) for anything that is not 127.0.0.1."""
    return {"HTTPS_PROXY": proxy, "HTTP_PROXY": proxy, "https_proxy": proxy, "http_proxy": proxy,
            "ALL_PROXY": proxy, "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}


class RefusingProxy:
    """An HTTP proxy on loopback that forwards nothing: it notes the host each request asked for (CONNECT
    host:port, or an absolute URL) and answers 403. What a client tried to reach past the rig is then known."""

    def __init__(self) -> None:
        import socketserver
        import threading

        self.asked: list[str] = []
        asked = self.asked

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                line = self.rfile.readline(4096).decode("latin-1").split()
                if len(line) >= 2:
                    target = line[1].split("://", 1)[-1].split("/", 1)[0]
                    asked.append(target)
                self.wfile.write(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def pinned_versions() -> dict[str, str]:
    versions = {}
    for line in PINS.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            _, name, version = line.split()
            versions[name] = version
    return versions


def need_clients() -> Path:
    """The client cache, installed from the current pins; skips with a reason (fails under CI) when it is not."""
    sys.path.insert(0, str(SCRIPTS))
    try:
        from install import installed, read_pins  # the installer's own test of its stamp
    finally:
        sys.path.remove(str(SCRIPTS))
    if not installed(CLIENTS_DIR, read_pins()):
        message = (f"the real clients are not installed from tests/clients/pins.txt in {CLIENTS_DIR} "
                   "(python3 tests/clients/install.py installs them; .ci/run does)")
        if REQUIRE_SHARED:
            pytest.fail(message + "; CTXPANE_REQUIRE_SHARED=1 forbids skipping")
        pytest.skip(message)
    return CLIENTS_DIR


def client_env(rig: "Rig", home: Path, **extra: str) -> dict[str, str]:
    """The environment a client runs in: a home of its own (its config, caches and logs land there, never in the
    user's), no key or server of this machine's, no way out but loopback, no telemetry or updates."""
    kept = {name: os.environ[name] for name in ("PATH", "LANG", "TERM", "SYSTEMROOT", "TMPDIR") if name in os.environ}
    home.mkdir(parents=True, exist_ok=True)
    return {**kept, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_CACHE_HOME": str(home / ".cache"), "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_STATE_HOME": str(home / ".local" / "state"),
            "PATH": f"{CLIENTS_DIR / 'py' / 'bin'}:{CLIENTS_DIR / 'npm' / 'node_modules' / '.bin'}:"
                    f"{os.environ.get('PATH', '/usr/bin:/bin')}",
            "DO_NOT_TRACK": "1", "NO_COLOR": "1", **no_internet(rig.proxy.url), **extra}


@dataclass
class Run:
    """One run of a client command: what it printed and how it ended (kept for the failure message)."""

    command: list[str]
    returncode: int | None
    seconds: float
    stdout: str
    stderr: str
    compaction: bool = False  # a run that compacts a session already counted, not a session of its own
    audited: bool = False  # its connections were traced
    outside: list[str] = field(default_factory=list)  # addresses past loopback it connected or sent to

    def tail(self) -> str:
        return f"$ {' '.join(self.command)[:300]}\n-> {self.returncode} in {self.seconds:.1f}s\n" \
               f"stdout: {self.stdout[-1500:]}\nstderr: {self.stderr[-1500:]}"


def run_client(command: list[str], env: dict, cwd: Path, timeout: float, stdin: str = "") -> Run:
    """Run a client to its end, bounded: past `timeout` its whole process group is killed and the run says so.
    Under strace (when the machine has it) every address the client and its children connect or send to is
    noted: anything but loopback is the client reaching past the proxy for the network."""
    audit = Path(env["HOME"]) / f".connects-{time.monotonic_ns()}.log"  # beside the client's files, not in its work
    traced = ["strace", "-f", "--seccomp-bpf", "-qq", "-e", "trace=connect,sendto", "-o", str(audit)] \
        if shutil.which("strace") else []
    started = time.monotonic()
    process = subprocess.Popen([*traced, *command], cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = process.communicate(stdin, timeout=timeout)
        code = process.returncode
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        code, stderr = None, stderr + f"\n[killed after {timeout:.0f} s]"
    run = Run(command, code, time.monotonic() - started, stdout, stderr)
    if traced:
        run.audited = True
        run.outside = outside_addresses(audit.read_text(encoding="utf-8", errors="replace") if audit.exists() else "")
        audit.unlink(missing_ok=True)
    return run


INET = re.compile(r'sa_family=AF_INET6?, sin6?_port=htons\((\d+)\).*?(?:inet_addr\("([^"]+)"\)|inet_pton\(AF_INET6, "([^"]+)")')
LOOPBACK = re.compile(r"^(127\.|::1$|::ffff:127\.)")


def outside_addresses(trace: str) -> list[str]:
    """The network addresses in an strace log of connect/sendto that are not loopback (a DNS server, a host)."""
    found = set()
    for match in INET.finditer(trace):
        port, address = int(match.group(1)), match.group(2) or match.group(3)
        if not LOOPBACK.match(address):
            found.add(f"{address}:{port}")
    return sorted(found)


class Rig:
    """The shim in front of the real server and `ctxpane tap --no-ui` in front of the shim, as processes of their
    own (the tap as a user runs it). `url` is the tap's base URL (…/v1), `origin` the same without /v1."""

    def __init__(self, llama_url: str, folder: Path, shim_env: dict[str, str]) -> None:
        self.folder = folder
        self.llama_url = llama_url
        self.sessions = folder / "sessions"
        self.shim_log = folder / "shim.log"
        self.tap_log = folder / "tap.log"
        self.proxy = RefusingProxy()
        self.shim_port, self.tap_port = free_port(), free_port()
        self.shim = self._start_shim(llama_url.removesuffix("/v1"), shim_env)
        self.tap = self._start_tap()
        self.origin = f"http://127.0.0.1:{self.tap_port}"
        self.url = self.origin + "/v1"

    def _start_shim(self, upstream_origin: str, shim_env: dict[str, str]) -> subprocess.Popen:
        script = SHARED / "server" / "tool-shim.py"
        if not script.exists():
            need_shared("the tool shim is needed")
        process = subprocess.Popen([sys.executable, "-u", str(script), str(self.shim_port), upstream_origin],
                                   env={**os.environ, **shim_env}, stdout=self.shim_log.open("w"),
                                   stderr=subprocess.STDOUT)
        until(lambda: port_open(self.shim_port) or process.poll() is not None, 30, "the shim to listen")
        assert process.poll() is None, self.shim_log.read_text()
        return process

    def _start_tap(self) -> subprocess.Popen:
        process = subprocess.Popen([sys.executable, "-m", "tui", "tap", "--no-ui", "--port", str(self.tap_port),
                                    "--upstream", f"http://127.0.0.1:{self.shim_port}/v1",
                                    "--session-dir", str(self.sessions)],
                                   cwd=ROOT, stdout=self.tap_log.open("w"), stderr=subprocess.STDOUT,
                                   env={**os.environ, "PYTHONUNBUFFERED": "1"})
        until(lambda: "listening on" in self.tap_log.read_text() or process.poll() is not None, 60,
              lambda: f"the tap to listen: {self.tap_log.read_text()}")
        assert process.poll() is None, self.tap_log.read_text()
        return process

    def stop(self) -> None:
        """Stop the tap as a user does (Ctrl+C: what is recorded is written), then the shim and the proxy."""
        self.proxy.stop()
        stopped(self.tap, lambda: self.tap.send_signal(signal.SIGINT), timeout=60)
        stopped(self.shim)

    def sent(self) -> dict[str, int]:
        """The API requests the upstream (the shim) saw, by API: the client's own, as the tap forwarded them."""
        seen: dict[str, int] = {}
        for line in self.shim_log.read_text(encoding="utf-8", errors="replace").splitlines():
            match = SHIM_LINE.match(line)
            if not match:
                continue
            api = match.group(1) or API_OF_PATH.get(match.group(2))
            if api:
                seen[api] = seen.get(api, 0) + 1
        return seen


def port_open(port: int) -> bool:
    import socket
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def exported(path: Path) -> dict:
    """A session file as one JSON object (`ctxpane export --format json`: every request's body whole)."""
    result = subprocess.run([sys.executable, "-m", "tui", "export", str(path), "--format", "json"],
                            capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def replay_check(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tui", "replay", "--check", str(path)], capture_output=True,
                          text=True, cwd=ROOT, timeout=600)


@dataclass
class Findings:
    """What one client's run came to: the table's row and each check that failed, with what was seen."""

    client: str
    version: str
    api: str = ""
    sent: int = 0
    recorded: int = 0
    compared: int = 0
    equal: int = 0
    sessions: int = 0
    conversations: int = 0
    sessions_found: int = 0  # the client sessions the conversations belong to (by the identity the client sent)
    main_conversations: int = 0  # conversations that are no side or sub-agent conversation of another
    replay_failed: int = 0
    cuts: int = 0
    compactions: int = 0
    traced: bool = False  # every run of the client had its connections traced
    outside: list[str] = field(default_factory=list)  # addresses past loopback the runs reached for
    asked: list[str] = field(default_factory=list)  # hosts the client asked the refusing proxy for (none reached)
    whole: int = 0  # replies recorded as complete: every client run ended well, so every reply reached it whole
    failures: list[str] = field(default_factory=list)

    def row(self) -> dict:
        return asdict(self)


def judge(rig: Rig, client: str, package: str, sessions: int, compactions: int = 0) -> Findings:
    """Read the tap's files after the run (the rig stopped) and hold them to what the upstream saw. `client` names
    the row (one package may be driven two ways), `package` is the pinned package whose version it shows."""
    sent = rig.sent()
    findings = Findings(client, pinned_versions().get(package, "?"), api="+".join(sorted(sent)) or "none",
                        sent=sum(sent.values()), sessions=sessions, compactions=compactions,
                        asked=sorted(set(rig.proxy.asked)))
    files = sorted(rig.sessions.glob("*.ctxpane.json"))
    findings.conversations = len(files)
    for path in files:
        judge_file(path, findings, rig.llama_url)
    judge_sessions(files, findings)
    if findings.sent == 0:
        findings.failures.append("the client sent no API request through the tap")
    if findings.recorded != findings.sent:
        findings.failures.append(f"requests recorded {findings.recorded} != sent {findings.sent} "
                                 f"(tap: {not_recorded_lines(rig)})")
    if findings.equal != findings.compared or findings.compared != findings.recorded:
        findings.failures.append(f"counts equal to the server's {findings.equal} of {findings.compared} compared "
                                 f"({findings.recorded} recorded)")
    if findings.whole != findings.recorded:
        findings.failures.append(f"replies recorded whole {findings.whole} of {findings.recorded}, although "
                                 "every run of the client ended well")
    if findings.sessions_found != sessions or findings.main_conversations != sessions:
        findings.failures.append(f"sessions found {findings.sessions_found}, main conversations "
                                 f"{findings.main_conversations} (of {findings.conversations}) != client sessions "
                                 f"{sessions}")
    if findings.replay_failed:
        findings.failures.append(f"replay --check failed for {findings.replay_failed} of {len(files)} files")
    if findings.cuts < compactions:
        findings.failures.append(f"client cuts shown {findings.cuts} < compactions run {compactions}")
    tap_files = [rig.tap_log, *rig.sessions.rglob("*")]
    keyed = [path.name for path in tap_files if path.is_file() and DUMMY_KEY.encode() in path.read_bytes()]
    if keyed:
        findings.failures.append(f"the client's key is in the tap's files: {keyed}")
    record(findings)
    return findings


def judge_sessions(files: list[Path], findings: Findings) -> None:
    """Which client session each conversation is of: the identity its first request carries (a conversation without
    one is a session of its own). A session's other conversations must each say why they are apart: a sub-agent
    linked to its parent, or a side request (a title, a summary) said to share the session."""
    found = set()
    for path in files:
        requests = exported(path).get("requests") or [{}]
        identity = requests[0].get("identity") or {}
        found.add((identity.get("kind"), identity.get("value")) if identity.get("value") else path.name)
        if not (identity.get("parent") or identity.get("note")):
            findings.main_conversations += 1
    findings.sessions_found = len(found)


def judge_file(path: Path, findings: Findings, llama_url: str) -> None:
    session = exported(path)
    for request in session.get("requests", []):
        findings.recorded += 1
        judge_count(path, request, findings, llama_url)
        reply = request.get("reply") or {}
        if reply.get("incomplete"):
            stream = reply.get("stream") or {}
            findings.failures.append(f"{path.name} #{request.get('number')}: reply marked incomplete "
                                     f"(finish {reply.get('finish_reason')}, {stream.get('error') or 'no error'})")
        else:
            findings.whole += 1
        if any(entry.get("policy") == "client" for entry in request.get("dropped") or []):
            findings.cuts += 1
    check = replay_check(path)
    if check.returncode != 0:
        findings.replay_failed += 1
        findings.failures.append(f"replay --check {path.name}: {check.stdout[-600:]} {check.stderr[-300:]}")


def judge_count(path: Path, request: dict, findings: Findings, llama_url: str) -> None:
    """The tap's count against the server's: the one the tap recorded from the reply, or, when the reply carried
    none (a scripted reply streamed without usage), the server's count of the recorded body, asked anew."""
    received = request.get("received") or {}
    counted, server, source = received.get("sent"), received.get("received"), "reply"
    if server is None:
        counted, server, source = request.get("document_tokens"), server_count(llama_url, request), "asked"
    if counted is None or server is None:
        return
    findings.compared += 1
    if counted == server:
        findings.equal += 1
    else:
        findings.failures.append(f"{path.name} #{request.get('number')}: counted {counted} "
                                 f"(exact={request.get('tokens_exact')}), server {server} (from the {source})")


def server_count(llama_url: str, request: dict) -> int | None:
    """The real server's prompt count for a recorded body: sent again, not streamed, for one token of reply."""
    import httpx

    kind = request.get("format") or "chat"
    path = {"chat": "/chat/completions", "messages": "/messages", "responses": "/responses"}.get(kind)
    body = request.get("body")
    if path is None or not isinstance(body, dict):
        return None
    body = {**body, "stream": False}
    body.pop("stream_options", None)
    body["max_output_tokens" if kind == "responses" else "max_tokens"] = 16 if kind == "responses" else 1
    reply = httpx.post(llama_url + path, json=body, timeout=300)
    if reply.status_code != 200:
        return None
    usage = reply.json().get("usage") or {}
    if kind == "chat":
        return usage.get("prompt_tokens")
    if kind == "messages":
        return sum(usage.get(key) or 0 for key in ("input_tokens", "cache_read_input_tokens",
                                                   "cache_creation_input_tokens"))
    return usage.get("input_tokens")


def not_recorded_lines(rig: Rig) -> list[str]:
    """The tap's lines for requests it could not record (its --no-ui output says why)."""
    lines = rig.tap_log.read_text(encoding="utf-8", errors="replace").splitlines()
    return [line[:300] for line in lines if "not recorded" in line][:5]


def record(findings: Findings) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{findings.client.replace('/', '_')}.json").write_text(json.dumps(findings.row(), indent=1))
