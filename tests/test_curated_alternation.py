"""Found by a review (fixed since; the test failed before): Under drop-oldest a reply whose question was dropped goes too (truncation._orphan_replies); the curated policy keeps
a relevant reply and drops its question, so the conversation sent opens with the reply, or has two user turns in a
row. A template that requires alternation (Llama 2's, Mistral's, Gemma's on Hugging Face raise 'Conversation roles
must alternate') then refuses the request: build_request raises where drop-oldest renders."""
from tui.context import get_tokenizer
from tui.context.errors import TemplateRenderError
from tui.context.messages import Message
from tui.context.policy.truncation import PolicySettings
from tui.context.request import RequestSettings, build_request
from tui.context.templates.library import ChatTemplate
from tui.context.untrusted.fences import FenceStyle

ALTERNATING = ChatTemplate("alternating", "file:alternating.jinja", (
    "{% for m in messages %}{% if (m.role == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
    "[{{ m.role }}] {{ m.content }}\n{% endfor %}[assistant]"))
TOKENIZER = get_tokenizer("o200k_base")
MESSAGES = [Message("user", "Tell me something about the weather today in general terms please " * 3),
            Message("assistant", "Lions sleep twenty hours a day."),
            Message("user", "How long do lions sleep?")]


def settings(policy):
    return RequestSettings(ALTERNATING, TOKENIZER, {}, None, True, PolicySettings(policy, context_window=40), FenceStyle())


def test_drop_oldest_renders():
    assert build_request(MESSAGES, settings("drop-oldest")).plan.kept == [2]


def test_curated_renders_too():
    try:
        view = build_request(MESSAGES, settings("curated"))
    except TemplateRenderError as exc:
        raise AssertionError(f"curated sent a conversation the template refuses: {exc}") from exc
    roles = [MESSAGES[i].role for i in view.plan.kept]
    assert roles[0] == "user" and all(a != b for a, b in zip(roles, roles[1:])), roles
