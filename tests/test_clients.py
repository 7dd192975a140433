"""Real clients, as they really talk, through `ctxpane tap` in front of the real llama.cpp server.

Each test drives one client installed from the registries at its pinned version (tests/clients/pins.txt, installed
by tests/clients/install.py into the client cache) through the tap -> the tool shim -> the server, for two sessions
that start with the same prompt (and, where the client compacts, a compaction), then holds the tap's files to what
the upstream saw (tests/client_rig.py says what is checked). Each client's run is bounded in time and reaches only
127.0.0.1.

Not in the default run: `python -m pytest -m clients` (.ci/run runs it as a step of its own; it skips with a reason
when the client cache is absent, and fails then under CTXPANE_REQUIRE_SHARED=1). `python tests/clients/table.py`
prints the table of the last run.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from client_rig import (CLIENTS_DIR, DUMMY_KEY, SCRIPTS, Findings, Rig, Run, client_env, judge, need_clients, record,
                        run_client)
from conftest import started_llama

# one worker runs them all (one wide server for the module); a client's test runs up to four sessions of
# RUN_TIMEOUT each, past the suite's 300 s a test
pytestmark = [pytest.mark.clients, pytest.mark.xdist_group("clients"), pytest.mark.timeout(1500)]

PROMPT = "Look up the key alpha and tell me its note."  # both sessions of every client start with it
RUN_TIMEOUT = 300  # seconds for one client session: the server reads a long agent prompt at 1-2k tokens/s
# what the shim calls for the harness's own scripts: their one tool, with the number of results so far
LOOKUP = {"SHIM_TOOL": "lookup", "SHIM_ARGS": '{"key": "k{n}"}', "SHIM_CALLS": "2"}
# the agents' prompts (system prompt and tools) run to tens of thousands of tokens: a window that holds them
WINDOW = "65536"


@pytest.fixture(scope="module")
def llama_wide():
    """The real server with a window wide enough for the agents' prompts (started only once a test needs it)."""
    need_clients()
    with started_llama(LLAMA_CTX=WINDOW) as url:
        yield url


@pytest.fixture()
def rig_for(llama_wide, tmp_path):
    """Start the rig with the shim's settings for one client; stopped at the end whatever happened."""
    rigs: list[Rig] = []

    def start(**shim_env: str) -> Rig:
        rig = Rig(llama_wide, tmp_path, shim_env)
        rigs.append(rig)
        return rig

    yield start
    for rig in rigs:
        rig.stop()


def verdict(rig: Rig, client: str, package: str, runs: list[Run], compactions: int = 0,
            compacted: bool = True) -> Findings:
    """Stop the rig (the tap writes what it holds), judge its files, and say every failed check at once.
    `compacted`: the client's own output says it compacted (else no cut can be expected of the tap)."""
    rig.stop()
    findings = judge(rig, client, package, sessions=len([run for run in runs if not run.compaction]),
                     compactions=compactions)
    if compactions and not compacted:
        findings.failures.append("the client did not say it compacted: "
                                 + "\n".join(run.tail() for run in runs if run.compaction))
    findings.failures += [f"the client itself failed:\n{run.tail()}" for run in runs if run.returncode != 0]
    findings.traced = all(run.audited for run in runs)
    findings.outside = sorted({address for run in runs for address in run.outside})
    findings.failures += [f"reached past loopback: {run.outside} ({' '.join(run.command)[:120]})"
                          for run in runs if run.outside]
    record(findings)  # the row again, with how the client's own runs went
    print(json.dumps(findings.row()))
    assert not findings.failures, f"{client}:\n- " + "\n- ".join(findings.failures)
    return findings


def python_client(rig: Rig, tmp_path: Path, script: str, *args: str, **env: str) -> Run:
    """One session of a harness script run with the client cache's Python (its pinned SDKs)."""
    environment = client_env(rig, tmp_path / "home", OPENAI_BASE_URL=rig.url, OPENAI_API_KEY=DUMMY_KEY,
                             ANTHROPIC_BASE_URL=rig.origin, ANTHROPIC_API_KEY=DUMMY_KEY, **env)
    return run_client([str(CLIENTS_DIR / "py" / "bin" / "python"), str(SCRIPTS / script), *args], environment,
                      tmp_path, RUN_TIMEOUT)


# (row, package, script and its arguments before the prompt, environment): the SDKs' own sessions, each a script
# run twice with the same first prompt
SDK_CLIENTS = [
    ("openai (chat)", "openai", "openai_chat.py", (), {}),
    ("openai (responses)", "openai", "openai_responses.py", (), {}),
    ("anthropic (messages)", "anthropic", "anthropic_messages.py", (), {}),
    ("openai-agents (chat)", "openai-agents", "agents_sdk.py", ("chat",), {}),
    ("openai-agents (responses)", "openai-agents", "agents_sdk.py", ("responses",), {}),
    ("langchain-openai", "langchain-openai", "langchain_chat.py", (), {}),
    # LiteLLM reads its model price map from the internet at import unless told to use its own copy
    ("litellm (SDK)", "litellm", "litellm_chat.py", (), {"LITELLM_LOCAL_MODEL_COST_MAP": "True"}),
]


@pytest.mark.parametrize("row, package, script, arguments, env", SDK_CLIENTS, ids=[row for row, *_ in SDK_CLIENTS])
def test_sdk_client(rig_for, tmp_path, row, package, script, arguments, env):
    rig = rig_for(**LOOKUP)
    runs = [python_client(rig, tmp_path, script, *arguments, PROMPT, HARNESS_BASE_URL=rig.url,
                          HARNESS_API_KEY=DUMMY_KEY, **env) for _ in range(2)]
    verdict(rig, row, package, runs)


# -- the agents from the npm registry ---------------------------------------------------------------------------------

NPM_BIN = CLIENTS_DIR / "npm" / "node_modules" / ".bin"
NOTES = "alpha: 42\n"  # the file the agents' scripted tool calls read


def workspace(tmp_path: Path) -> Path:
    """The folder an agent works in: one small file its scripted tool call reads."""
    folder = tmp_path / "work"
    folder.mkdir(exist_ok=True)
    (folder / "notes.txt").write_text(NOTES, encoding="utf-8")
    return folder


def claude_env(rig: Rig, tmp_path: Path) -> dict[str, str]:
    """Claude Code pointed at the tap with a dummy key, with everything that would leave the machine turned off."""
    return client_env(rig, tmp_path / "home", ANTHROPIC_BASE_URL=rig.origin, ANTHROPIC_API_KEY=DUMMY_KEY,
                      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_AUTOUPDATER="1", DISABLE_TELEMETRY="1",
                      DISABLE_ERROR_REPORTING="1", DISABLE_BUG_COMMAND="1", CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY="1",
                      ANTHROPIC_MODEL="tiny-qwen3", ANTHROPIC_SMALL_FAST_MODEL="tiny-qwen3",
                      ANTHROPIC_DEFAULT_HAIKU_MODEL="tiny-qwen3", CLAUDE_CODE_IDE_SKIP_AUTO_INSTALL="1")


def claude(rig: Rig, tmp_path: Path, *args: str, compaction: bool = False) -> Run:
    run = run_client([str(NPM_BIN / "claude"), "-p", *args, "--model", "tiny-qwen3", "--output-format", "json",
                      "--allowedTools", "Read"], claude_env(rig, tmp_path), workspace(tmp_path), RUN_TIMEOUT)
    run.compaction = compaction
    return run


def session_id(run: Run) -> str:
    """The session id Claude Code's JSON result names (to resume that session)."""
    try:
        return json.loads(run.stdout.strip().splitlines()[-1])["session_id"]
    except (ValueError, IndexError, KeyError) as exc:
        pytest.fail(f"no session id in Claude Code's result ({exc}):\n{run.tail()}")


def test_claude_code(rig_for, tmp_path):
    # Claude Code's compaction prompt asks for a summary: forwarded to the server, never answered with a tool call
    rig = rig_for(SHIM_TOOL="Read", SHIM_ARGS=json.dumps({"file_path": str(workspace(tmp_path) / "notes.txt")}),
                  SHIM_CALLS="2", SHIM_SKIP_RE="summary of the conversation")
    runs = [claude(rig, tmp_path, PROMPT) for _ in range(2)]
    runs.append(claude(rig, tmp_path, "/compact", "--resume", session_id(runs[0]), compaction=True))
    compacted = '"local_command":"compact"' in runs[-1].stdout and '"is_error":false' in runs[-1].stdout
    runs.append(claude(rig, tmp_path, "And the key beta?", "--resume", session_id(runs[0]), compaction=True))
    verdict(rig, "Claude Code", "@anthropic-ai/claude-code", runs, compactions=1, compacted=compacted)


def codex_home(rig: Rig, tmp_path: Path) -> Path:
    """A Codex home whose config points at the tap: a provider of its own speaking the Responses API, no retries
    (a retry would be a request the harness did not expect), no analytics or update checks."""
    home = tmp_path / "home" / ".codex"
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(f"""model = "tiny-qwen3"
model_provider = "tap"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[analytics]
enabled = false

[model_providers.tap]
name = "ctxpane tap"
base_url = "{rig.url}"
wire_api = "responses"
env_key = "HARNESS_API_KEY"
request_max_retries = 0
stream_max_retries = 0
""", encoding="utf-8")
    return home


CODEX_COMPACT_AT = 6200  # tokens: a session of the harness's prompt and two tool calls ends past it (~6,250)


def codex(env: dict, tmp_path: Path, *args: str, compaction: bool = False) -> Run:
    run = run_client([str(NPM_BIN / "codex"), "exec", "--skip-git-repo-check", *args], env, workspace(tmp_path),
                     RUN_TIMEOUT)
    run.compaction = compaction
    return run


def codex_session(run: Run) -> str:
    """The session id `codex exec` prints in its header (to resume that session)."""
    found = re.search(r"session id: (\S+)", run.stdout + run.stderr)
    if not found:
        pytest.fail(f"no session id in Codex's output:\n{run.tail()}")
    return found.group(1)


def test_codex(rig_for, tmp_path):
    # Codex compacts on its own once a session's tokens pass model_auto_compact_token_limit: the first session
    # resumed under a limit just below where it ended compacts before its next turn. Its compaction prompt, and
    # the turn after it (which starts from the handoff summary), are forwarded: a scripted call there would
    # compact again, and again.
    rig = rig_for(SHIM_TOOL="exec_command", SHIM_ARGS='{"cmd": "cat notes.txt"}', SHIM_CALLS="2",
                  SHIM_SKIP_RE="CONTEXT CHECKPOINT COMPACTION|Another language model started")
    env = client_env(rig, tmp_path / "home", CODEX_HOME=str(codex_home(rig, tmp_path)), HARNESS_API_KEY=DUMMY_KEY)
    runs = [codex(env, tmp_path, PROMPT) for _ in range(2)]
    runs.append(codex(env, tmp_path, "-c", f"model_auto_compact_token_limit={CODEX_COMPACT_AT}", "resume",
                      codex_session(runs[0]), "And the key beta?", compaction=True))
    verdict(rig, "Codex", "@openai/codex", runs, compactions=1,
            compacted="context compacted" in runs[-1].stdout + runs[-1].stderr)


def opencode_env(rig: Rig, tmp_path: Path) -> dict[str, str]:
    """opencode with one provider, the tap, through its bundled OpenAI-compatible adapter; no model list fetched,
    no update, no language servers downloaded."""
    env = client_env(rig, tmp_path / "home", HARNESS_API_KEY=DUMMY_KEY, OPENCODE_DISABLE_AUTOUPDATE="1",
                     OPENCODE_DISABLE_MODELS_FETCH="1", OPENCODE_DISABLE_LSP_DOWNLOAD="1")
    config = Path(env["XDG_CONFIG_HOME"]) / "opencode" / "opencode.json"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(json.dumps({
        "$schema": "https://opencode.ai/config.json", "autoupdate": False, "share": "disabled",
        "provider": {"tap": {"npm": "@ai-sdk/openai-compatible", "name": "ctxpane tap",
                             "options": {"baseURL": rig.url, "apiKey": "{env:HARNESS_API_KEY}"},
                             "models": {"tiny-qwen3": {"name": "tiny-qwen3", "tool_call": True,
                                                       "limit": {"context": 65536, "output": 256}}}}},
        "model": "tap/tiny-qwen3", "small_model": "tap/tiny-qwen3"}), encoding="utf-8")
    return env


def test_opencode(rig_for, tmp_path):
    rig = rig_for(SHIM_TOOL="read", SHIM_ARGS=json.dumps({"filePath": str(workspace(tmp_path) / "notes.txt")}),
                  SHIM_CALLS="2")
    env = opencode_env(rig, tmp_path)
    runs = [run_client([str(NPM_BIN / "opencode"), "run", PROMPT], env, workspace(tmp_path), RUN_TIMEOUT)
            for _ in range(2)]
    verdict(rig, "opencode", "opencode-ai", runs)


def llm_env(rig: Rig, tmp_path: Path) -> dict[str, str]:
    """`llm` with one extra OpenAI-compatible model, the tap, that supports tools; its key is the dummy one, read
    from OPENAI_API_KEY as `llm` reads the openai key."""
    user_path = tmp_path / "home" / "llm"
    user_path.mkdir(parents=True, exist_ok=True)
    (user_path / "extra-openai-models.yaml").write_text(
        f"- model_id: tap-tiny\n  model_name: tiny-qwen3\n  api_base: {rig.url}\n  api_key_name: openai\n"
        "  supports_tools: true\n", encoding="utf-8")
    return client_env(rig, tmp_path / "home", LLM_USER_PATH=str(user_path), OPENAI_API_KEY=DUMMY_KEY)


def test_llm(rig_for, tmp_path):
    rig = rig_for(SHIM_TOOL="llm_time", SHIM_ARGS="{}", SHIM_CALLS="2")  # llm_time: one of llm's own tools
    env = llm_env(rig, tmp_path)
    runs = [run_client([str(CLIENTS_DIR / "py" / "bin" / "llm"), "-m", "tap-tiny", "-T", "llm_time", "-o",
                        "max_tokens", "12", PROMPT], env, tmp_path, RUN_TIMEOUT) for _ in range(2)]
    verdict(rig, "llm", "llm", runs)
