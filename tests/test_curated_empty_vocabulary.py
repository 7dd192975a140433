"""Found by a review (fixed since; the test failed before): build_request under the curated policy raises ValueError (bm25s: max() of an empty sequence) when no item to rank
has a word bm25s keeps (two letters or more, not an English stopword): an image sent alone, a tool call with no
text and a result of '1', a reply of 'I'."""
from tui.context import builtin_template, get_tokenizer
from tui.context.messages import Message, Provenance
from tui.context.policy.truncation import PolicySettings
from tui.context.request import RequestSettings, build_request
from tui.context.untrusted.fences import FenceStyle

SETTINGS = RequestSettings(builtin_template("chatml"), get_tokenizer("o200k_base"), {}, None, True,
                           PolicySettings("curated", context_window=8000), FenceStyle())
CALL = [{"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{}"}}]
IMAGE = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}


def test_a_tool_call_and_a_one_character_result():
    messages = [Message("system", "You add numbers."), Message("assistant", None, tool_calls=CALL),
                Message("tool", "1", tool_call_id="c1", provenance=Provenance("tool", False, "tool:add")),
                Message("user", "What is the result?")]
    build_request(messages, SETTINGS)


def test_an_image_then_the_question():
    messages = [Message("user", [IMAGE]), Message("user", "Describe the picture.")]
    build_request(messages, SETTINGS)


def test_short_replies():
    messages = [Message("user", "a"), Message("assistant", "I"), Message("user", "Why?")]
    build_request(messages, SETTINGS)
