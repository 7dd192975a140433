"""Conversations by the client's own identity (tui/tap/identity.py, tui/tap/conversations.py), through the tap and the
loopback upstream, with the real `anthropic` and `openai` SDKs sending the header and body shapes of Claude Code and
Codex: two sessions that start alike stay two conversations; one session that compacts stays one, its turn shown as
the client's cut; a sub-agent is a conversation of its own, linked to the call that started it; a hostile identity
is bounded and kept as text."""

from __future__ import annotations

import json
import uuid
from urllib.parse import quote

import anthropic
import openai
import pytest

from session_files import session_data
from tap_helpers import RunningTap, upstream  # noqa: F401 - upstream is a fixture
from tui.tap.conversations import Conversations
from tui.tap.identity import Identity, IdentityKind, bounded, claude_code_session, hints_of, identity_of

KEY = "sk-ant-identity-secret-0123456789"
SYSTEM = [{"type": "text", "text": "You are Claude Code, a coding agent. Follow the rules of this repository. " * 3}]
SUBAGENT_SYSTEM = [{"type": "text", "text": "You are a search agent for Claude Code. Report what you find."}]
BETAS = ["claude-code-20250219", "interleaved-thinking-2025-05-14", "context-management-2025-06-27"]


@pytest.fixture(scope="module")
def tap(upstream, tmp_path_factory):
    running = RunningTap(upstream.url, tmp_path_factory.mktemp("identity-sessions"))
    yield running
    running.stop()


class ClaudeCode:
    """One Claude Code session as it talks: its headers, its metadata.user_id, the Messages beta path."""

    def __init__(self, tap: RunningTap, reply: str = "fine") -> None:
        self.session = str(uuid.uuid4())
        self.base = f"{tap.url}/reply"
        self.headers = {"X-Claude-Code-Session-Id": self.session, "x-app": "cli",
                        "User-Agent": "claude-cli/2.0.14 (external, cli)"}
        self.user_id = f"user_{'ab12' * 16}_account__session_{self.session}"

    def send(self, messages: list, system: list = SYSTEM, **query: str):
        sdk = anthropic.Anthropic(base_url=self.base, api_key=KEY, max_retries=0, timeout=20,
                                  default_headers=self.headers, default_query=query or None)
        return sdk.beta.messages.create(model="claude-sonnet-4-5", max_tokens=64, system=system, messages=messages,
                                        betas=BETAS, metadata={"user_id": self.user_id})


def user(text: str) -> dict:
    return {"role": "user", "content": text}


def assistant(text: str) -> dict:
    return {"role": "assistant", "content": text}


def recorded(tap: RunningTap, since: int) -> list:
    tap.settle()
    return [tap.recorder.tapped[n] for n in sorted(tap.recorder.tapped) if n > since]


def latest(tap: RunningTap) -> int:
    return max(tap.recorder.tapped, default=0)


def test_two_claude_code_sessions_that_start_alike_are_two_conversations(tap):
    since = latest(tap)
    first, second = ClaudeCode(tap), ClaudeCode(tap)
    for session in (first, second):  # the same prompt, the same system prompt, the same reply
        session.send([user("Explain this repository")])
        session.send([user("Explain this repository"), assistant("fine"), user("And its tests?")])
    tapped = recorded(tap, since)
    conversations = [t.conversation for t in tapped]
    assert conversations[0] == conversations[1] and conversations[2] == conversations[3]
    assert conversations[0] != conversations[2]
    assert not any(t.record.dropped for t in tapped)  # no false "client rewrote its system prompt"
    assert tapped[2].record.identity["kind"] == IdentityKind.CLAUDE_CODE_SESSION.value
    assert tapped[2].record.identity["value"] == second.session
    assert tapped[2].record.identity["source"] == "header x-claude-code-session-id"


def test_a_compacted_claude_code_session_stays_one_conversation_with_the_cut_shown(tap):
    since = latest(tap)
    session = ClaudeCode(tap)
    history = [user("Fix the failing test in tests/test_parser.py")]
    session.send(history)
    history += [assistant("fine"), user("Now run the whole suite and read every failure carefully")]
    session.send(history)
    history += [assistant("fine")]
    session.send(history + [user("Your task is to create a detailed summary of the conversation so far.")])
    summary = "This session is being continued from a previous conversation. Summary: the parser test was fixed."
    session.send([user(summary), user("Go on with the next failure")])
    tapped = recorded(tap, since)
    assert len({t.conversation for t in tapped}) == 1, [t.conversation for t in tapped]
    last = tapped[-1].record
    cut = last.compaction
    assert cut["previous_request"] == 3 and cut["left"] == 5 and cut["left_tokens"] > 0
    assert cut["summary"].startswith("This session is being continued") and len(cut["summary_ids"]) == 2
    assert cut["tokens_before"] == tapped[-2].record.document_tokens > cut["tokens_after"] == last.document_tokens
    assert len(last.dropped) == 5 and all(e["policy"] == "client" and "compacted" in e["reason"] for e in last.dropped)
    notes = " ".join(tapped[-1].view.hidden.notes)
    assert "the client compacted its history: 5 messages of request 3" in notes
    path = tap.recorder.threads[tapped[-1].conversation].path
    saved = session_data(path)["requests"][-1]
    assert saved["compaction"]["left"] == 5 and saved["identity"]["value"] == session.session
    from tui.commands.tap import request_line
    assert "client compacted: 5 messages" in request_line("end", tapped[-1])  # (the line --no-ui prints)


def test_a_sub_agent_is_its_own_conversation_linked_to_the_call_that_started_it(tap):
    since = latest(tap)
    session = ClaudeCode(tap)
    task = "Find every place where the parser reads a number and list the files"
    history = [user("Where are numbers parsed?")]
    session.send(history, task=task)  # the reply calls the Task tool with that prompt
    session.send([user(task)], system=SUBAGENT_SYSTEM)  # the sub-agent: the same session, another system prompt
    session.send([user(task), assistant("fine"), user("Keep looking in tests/")], system=SUBAGENT_SYSTEM)
    tapped = recorded(tap, since)
    parent, child, child_again = tapped
    assert child.conversation != parent.conversation and child_again.conversation == child.conversation
    assert not child.record.dropped and not parent.record.dropped  # not a rewrite of the parent's system prompt
    link = child.record.identity["parent"]
    assert link["conversation"] == parent.conversation and link["request"] == 1
    assert link["call_id"] == "toolu_task1" and link["tool"] == "Task"
    assert link["session"] == tap.recorder.threads[parent.conversation].session.id
    assert "sub-agent of" in tap.recorder.threads[child.conversation].session.title
    assert child_again.record.identity.get("parent") is None  # said once, on its first request


def test_two_codex_sessions_that_start_alike_are_two_conversations_and_a_thread_links_its_parent(tap):
    since = latest(tap)
    ids = []
    for _ in range(2):
        session = str(uuid.uuid4())
        ids.append(session)
        sdk = openai.OpenAI(base_url=f"{tap.url}/reply/v1", api_key=KEY, max_retries=0, timeout=20,
                            default_headers={"session_id": session, "originator": "codex_cli_rs",
                                             "User-Agent": "codex_cli_rs/0.46.0 (Debian 12; x86_64)"})
        sdk.responses.create(model="gpt-5-codex", instructions="You are Codex.", input="Explain this repository",
                             prompt_cache_key=session)
    child = str(uuid.uuid4())
    sdk = openai.OpenAI(base_url=f"{tap.url}/reply/v1", api_key=KEY, max_retries=0, timeout=20, default_headers={
        "session_id": ids[1], "thread-id": child, "x-openai-subagent": "collab_spawn",
        "x-codex-parent-thread-id": ids[1]})
    sdk.responses.create(model="gpt-5-codex", instructions="You are a helper.", input="Look at the tests")
    tapped = recorded(tap, since)
    assert len({t.conversation for t in tapped}) == 3
    assert [t.record.identity["kind"] for t in tapped] == ["codex-session", "codex-session", "codex-thread"]
    assert tapped[2].record.identity["subagent"] == "collab_spawn"
    assert tapped[2].record.identity["parent"]["conversation"] == tapped[1].conversation


def test_another_identity_never_merges_and_a_weak_one_leaves_content_to_decide(tap):
    since = latest(tap)
    sdk = openai.OpenAI(base_url=f"{tap.url}/reply/v1", api_key=KEY, max_retries=0, timeout=20)
    ask = [{"role": "user", "content": "Summarise the release notes"}]
    sdk.chat.completions.create(model="m", messages=ask, user="alice")
    sdk.chat.completions.create(model="m", messages=[*ask, assistant("fine"), user("Shorter")], user="bob")
    sdk.chat.completions.create(model="m", messages=[*ask, assistant("fine"), user("Shorter")], user="alice")
    tapped = recorded(tap, since)
    alice, bob, alice_again = (t.conversation for t in tapped)
    assert alice != bob and alice_again == alice


def test_a_hostile_identity_is_bounded_and_kept_as_text(tap):
    since = latest(tap)
    hostile = "\x1b]52;c;" + "A" * 5000
    sdk = openai.OpenAI(base_url=f"{tap.url}/reply/v1", api_key=KEY, max_retries=0, timeout=20)
    sdk.chat.completions.create(model="m", messages=[user("hi there")], extra_body={"prompt_cache_key": hostile})
    (tapped,) = recorded(tap, since)
    identity = tapped.record.identity
    assert identity["kind"] == "prompt-cache-key" and identity["value"].startswith("sha256:")
    assert len(identity["value"]) == 39 and "\x1b" not in json.dumps(identity)
    saved = session_data(tap.recorder.threads[tapped.conversation].path)
    assert saved["requests"][0]["identity"]["value"] == identity["value"]


def test_identities_are_read_defensively():
    session = str(uuid.uuid4())
    assert claude_code_session(f"user_{'f' * 64}_account_{uuid.uuid4()}_session_{session}") == session
    assert claude_code_session(json.dumps({"device_id": "d", "session_id": session})) == session
    assert claude_code_session("user_x_session_") == "" and claude_code_session(7) == ""
    assert claude_code_session("{not json") == "" and claude_code_session("plain") == ""
    assert bounded("a b") .startswith("sha256:") and bounded(" ") == "" and bounded(None) == "" and bounded(12) == "12"
    header_first = identity_of([("X-Claude-Code-Session-Id", "one")], {"metadata": {"user_id": "user_x_session_two2two2"}})
    assert header_first is not None and header_first.value == "one" and header_first.names_a_session
    assert identity_of([], {"user": "u1"}).kind is IdentityKind.USER
    assert not identity_of([], {"prompt_cache_key": "k"}).names_a_session
    opencode = identity_of([("User-Agent", "opencode/1.18.33 ai-sdk/provider-utils")], {"prompt_cache_key": "ses_1"})
    assert opencode.kind is IdentityKind.SESSION_CACHE_KEY and opencode.names_a_session
    assert identity_of([], {"metadata": "not an object"}) is None and identity_of([], []) is None
    codex_body = {"client_metadata": {"session_id": "s", "thread_id": "t"}}  # (Codex 0.171 sends these too)
    assert identity_of([], codex_body).value == "t"
    turn = json.dumps({"session_id": "s", "thread_id": "t2", "parent_thread_id": "t", "subagent_kind": "review",
                       "request_kind": "turn"})
    hints = hints_of([("x-codex-turn-metadata", turn)])
    assert hints.parent is not None and hints.parent.value == "t" and hints.subagent == "review"
    assert hints.request_kind == "turn" and hints_of([("x-codex-turn-metadata", "{broken")]).parent is None


def test_the_query_of_a_task_reply_is_a_tool_call(tap):
    """(the loopback's /reply?task= answers as Claude Code's model calls its Task tool)"""
    answer = ClaudeCode(tap).send([user("x")], task=quote("find it"))
    assert answer.content[-1].type == "tool_use" and answer.content[-1].name == "Task"


def test_a_session_that_sends_its_last_turn_again_changed_is_not_a_compaction_and_a_changed_line_is_one_agent():
    """As Claude Code 2.1 was seen to do through the tap: a turn sent again with its last message amended, and after
    /compact a system prompt whose first line (a hash) changed."""
    conversations, session = Conversations(), Identity(IdentityKind.CLAUDE_CODE_SESSION, "s1")
    prompt = "billing: cc_version=2.1.337.ef8\n" + "\n".join(f"rule {n} of the agent" for n in range(12))

    def send(messages: list, reply: str = "ok"):
        match = conversations.place(messages, "m", "", session)
        conversation = conversations.commit(match, messages, "m", "", session)
        conversation.answered({"content": reply})
        return conversation, match
    system = {"role": "system", "content": prompt}
    first, _ = send([system, user("say hi")])
    send([system, user("say hi"), assistant("ok"), user("say more")])
    again, changed = send([system, user("say hi"), assistant("ok"), user("say more [no visible output]")])
    assert again is first and not changed.compacted and len(changed.vanished) == 1
    moved = {"role": "system", "content": prompt.replace("ef8", "58d")}
    compacted, cut = send([moved, user("This session is being continued from a previous conversation.")])
    assert compacted is first and cut.compacted
    assert [v.rewritten for v in cut.vanished] == [True, False, False, False]
    other = {"role": "system", "content": "You are a search agent. Report what you find."}
    sub, start = send([other, user("Find the parser")])
    assert sub is not first and start.parent is None and start.sibling == first.number  # (no call names it)


def test_opencodes_title_request_and_first_turn_share_a_session_unlinked(tap):
    """opencode 1.18.33, seen through the tap: a title request, then its first turn, both under x-session-id."""
    since = latest(tap)
    session = "ses_" + uuid.uuid4().hex[:26]
    sdk = openai.OpenAI(base_url=f"{tap.url}/reply/v1", api_key=KEY, max_retries=0, timeout=20, default_headers={
        "User-Agent": "opencode/1.18.33 ai-sdk/provider-utils/4.0.23 runtime/bun/1.3.14",
        "x-session-affinity": session, "x-session-id": session})
    sdk.chat.completions.create(model="m", messages=[{"role": "system", "content": "You are a title generator."},
                                                     user("say hi")])
    sdk.chat.completions.create(model="m", messages=[{"role": "system", "content": "You are opencode, an agent."},
                                                     user("say hi")])
    title, turn = recorded(tap, since)
    assert title.conversation != turn.conversation and not turn.record.dropped
    assert turn.record.identity["kind"] == "session-header" and "parent" not in turn.record.identity
    assert f"same session as conversation {title.conversation}" in turn.record.identity["note"]
