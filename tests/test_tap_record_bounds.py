"""What the tap writes of how a request was sent and who sent it stays within what the session reader accepts, at
every bound at once (the most headers, the longest names and values, the longest identity): the file opens again
with the same values; and a file written before these fields existed opens without them."""

from __future__ import annotations

from tui.sessions.log_writer import log_bytes
from tui.sessions.model import RequestRecord, Session
from tui.sessions.store import load_session
from tui.tap.conversations import Conversation, Match
from tui.tap.identity import Hints, Identity, IdentityKind, bounded
from tui.tap.origin import identity_record
from tui.tap.sent import MAX_HEADERS, kept_headers, sent_record


def test_the_largest_sent_and_identity_the_tap_writes_open_again(tmp_path):
    raw = [(f"X-{'n' * 400}-{i}".encode(), ("é" * 9000).encode()) for i in range(MAX_HEADERS + 50)]
    raw += [(b"Authorization", b"Bearer sk-" + b"k" * 40)]
    headers = kept_headers(raw, ["sk-" + "k" * 40])
    assert len(headers) == MAX_HEADERS
    identity = Identity(IdentityKind.CLAUDE_CODE_SESSION, bounded("\x1b" + "s" * 10_000), "header x-claude-code-session-id")
    record = RequestRecord(number=1, time="2026-12-07T00:00:00+00:00", body={"messages": [{"role": "user",
                                                                                            "content": "hi"}]},
                           sent=sent_record("POST" * 10, "/v1/chat/completions?" + "q" * 20_000, headers),
                           identity=identity_record(identity, Hints("x" * 500, None, "y" * 500),
                                                    Match(None, [], sibling=3), {}),
                           compaction={"previous_request": 1, "left": 2, "left_tokens": 10, "summary_ids": ["m1"],
                                       "summary": "s" * 1000, "tokens_before": 20, "tokens_after": 5})
    session = Session(requests=[record])
    path = tmp_path / "bounds.ctxpane.json"
    path.write_bytes(log_bytes(session))
    (read,) = load_session(path).session.requests
    assert read.sent == record.sent and read.identity["value"] == record.identity["value"]
    assert read.identity["value"].startswith("sha256:") and read.compaction == record.compaction


def test_a_file_without_the_new_fields_opens_as_before(tmp_path):
    session = Session(requests=[RequestRecord(number=1, time="2026-12-07T00:00:00+00:00",
                                              body={"messages": [{"role": "user", "content": "hi"}]})])
    path = tmp_path / "old.ctxpane.json"
    path.write_bytes(log_bytes(session))
    (read,) = load_session(path).session.requests
    assert read.sent is None and read.identity is None and read.compaction is None


def test_a_conversation_title_is_bounded_text():
    conversation = Conversation(7, identity=Identity(IdentityKind.USER, bounded("u" * 50)))
    from tui.tap.origin import title_of
    title = title_of(conversation, "client\x1b[2J/1.0 127.0.0.1", "m" * 2000)
    assert len(title) <= 1000 and title.startswith("tap 7: client")
