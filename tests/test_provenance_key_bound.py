"""Found by a review (fixed since; the test failed before): KEY_CHARS (200) bounds a provenance key in the attach dialog and message_from_dict, but a session file's key is read
through the schema's Label (500) and kept whole: the same file gives different keys by the path it is read on (two
keys equal in their first 200 characters supersede each other on one path and not on the other)."""

from tui.context.messages import KEY_CHARS, message_from_dict
from tui.context.messages import Message, Provenance
from tui.sessions.model import Session
from tui.sessions.store import load_session, save_session


def test_a_long_key_is_bounded_the_same_on_every_path(tmp_path):
    key = "k" * 300
    record = {"role": "user", "content": "port 1", "provenance": {"source": "memory", "key": key}}
    path = tmp_path / "s.ctxpane.json"
    save_session(Session(messages=[Message("user", "port 1", provenance=Provenance("memory", False, "", key))]), path)
    loaded = load_session(path).session.messages[0].provenance.key
    assert len(message_from_dict(record, 0).provenance.key) == KEY_CHARS
    assert len(loaded) <= KEY_CHARS, len(loaded)
