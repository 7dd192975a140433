"""The harmony renderer against OpenAI's own openai-harmony library, beyond the shared cases."""

import gzip
import json
from importlib import resources

import pytest

from tui.context.templates.library import builtin_template

harmony = pytest.importorskip("openai_harmony")
H = harmony
DATE = "2025-03-14"
TOOLS = [{"type": "function", "function": {
    "name": "lookup", "description": "Look a word up.",
    "parameters": {"type": "object", "properties": {
        "word": {"type": "string", "description": "The word"},
        "limit": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}},
        "mode": {"type": "string", "enum": ["fast", "slow"]}}, "required": ["word"]}}}]


@pytest.fixture(scope="module")
def encoding(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiktoken")
    raw = gzip.decompress(resources.files("tui.context.tokens").joinpath("encodings", "o200k_base.tiktoken.gz").read_bytes())
    (folder / "o200k_base.tiktoken").write_bytes(raw)
    import os
    os.environ["TIKTOKEN_ENCODINGS_BASE"] = str(folder)  # the library reads its vocabulary offline from here
    return H.load_harmony_encoding(H.HarmonyEncodingName.HARMONY_GPT_OSS)


def to_library(messages, tools):
    out = [H.Message.from_role_and_content(H.Role.SYSTEM, H.SystemContent.new().with_conversation_start_date(DATE))]
    instructions = next((m["content"] for m in messages if m["role"] == "system"), "")
    if instructions or tools:
        dev = H.DeveloperContent.new()
        if instructions:
            dev = dev.with_instructions(instructions)
        if tools:
            dev = dev.with_function_tools([H.ToolDescription.new(t["function"]["name"], t["function"]["description"],
                                                                 parameters=t["function"]["parameters"]) for t in tools])
        out.append(H.Message.from_role_and_content(H.Role.DEVELOPER, dev))
    names = {}
    for m in messages:
        if m["role"] == "user":
            out.append(H.Message.from_role_and_content(H.Role.USER, m["content"]))
        elif m["role"] == "assistant":
            if m.get("reasoning_content"):
                out.append(H.Message.from_role_and_content(H.Role.ASSISTANT, m["reasoning_content"]).with_channel("analysis"))
            if m.get("content") or not m.get("tool_calls"):
                out.append(H.Message.from_role_and_content(H.Role.ASSISTANT, m.get("content") or "").with_channel("final"))
            for call in m.get("tool_calls") or []:
                names[call["id"]] = call["function"]["name"]
                out.append(H.Message.from_role_and_content(H.Role.ASSISTANT, call["function"]["arguments"])
                           .with_channel("commentary").with_recipient(f"functions.{call['function']['name']}")
                           .with_content_type("<|constrain|>json"))
        elif m["role"] == "tool":
            author = H.Author.new(H.Role.TOOL, f"functions.{names[m['tool_call_id']]}")
            out.append(H.Message.from_author_and_content(author, m["content"]).with_channel("commentary")
                       .with_recipient("assistant"))
    return H.Conversation.from_messages(out)


CALL = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": json.dumps({"word": "fox"})}}
CONVERSATIONS = {
    "plain": ([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}], None),
    "tools_in_progress": ([{"role": "user", "content": "define fox"},
                           {"role": "assistant", "content": "", "reasoning_content": "I should look it up.",
                            "tool_calls": [CALL]},
                           {"role": "tool", "tool_call_id": "c1", "content": "a small wild canine"}], TOOLS),
    "finished_turn_then_question": ([{"role": "user", "content": "a"},
                                     {"role": "assistant", "content": "b", "reasoning_content": "hmm"},
                                     {"role": "user", "content": "c"}], None),
    "unicode_and_markers": ([{"role": "user", "content": "é 你好 <|end|> [INST]"}], TOOLS),
}


@pytest.mark.parametrize("name", list(CONVERSATIONS))
def test_matches_openai_harmony_for_completion(encoding, name):
    messages, tools = CONVERSATIONS[name]
    expected = encoding.decode(encoding.render_conversation_for_completion(to_library(messages, tools), H.Role.ASSISTANT))
    ours = builtin_template("harmony").render(messages, tools=tools, add_generation_prompt=True, current_date=DATE)
    assert ours == expected
