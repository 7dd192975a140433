"""SVG snapshot of a Markdown reply (heading, emphasis, list, table, highlighted code). Regenerate, then look."""

import pytest

from app_helpers import isolated, make_app
from test_chat_markdown import REPLY, markdown_session
from test_snapshots import prepare


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    isolated(monkeypatch, tmp_path)


def test_markdown_reply(snap_compare, tmp_path):
    reply = REPLY + "\n1. first\n2. second\n\n> a quote, and `inline code`\n"
    app = make_app(tmp_path, offline=True, file=markdown_session(tmp_path, reply))
    assert snap_compare(app, terminal_size=(120, 40), run_before=prepare())
